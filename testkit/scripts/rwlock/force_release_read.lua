-- Redisson's read-side forceUnlock, from the family protocol doc §3.
-- KEYS: name, channel. ARGV: message (0), publish command.
if redis.call('hget', KEYS[1], 'mode') == 'read' then
    redis.call('del', KEYS[1])
    redis.call(ARGV[2], KEYS[2], ARGV[1])
    return 1
end
return 0
