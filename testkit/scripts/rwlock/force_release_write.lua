-- Redisson's write-side forceUnlock, from the family protocol doc §3.
-- KEYS: name, channel. ARGV: message (1), publish command.
if redis.call('hget', KEYS[1], 'mode') == 'write' then
    redis.call('del', KEYS[1])
    redis.call(ARGV[2], KEYS[2], ARGV[1])
    return 1
end
return 0
