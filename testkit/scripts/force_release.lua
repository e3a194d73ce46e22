-- Redisson's forceUnlock. KEYS[1] lock name, KEYS[2] release channel;
-- ARGV[1] release message.
if redis.call('del', KEYS[1]) == 1 then
    redis.call('publish', KEYS[2], ARGV[1])
    return 1
end
return 0
