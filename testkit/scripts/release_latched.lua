-- Redisson's unlock since 3.24, with the unlock latch, written from the
-- family protocol doc (sections 0.5 and 1). KEYS[1] lock name, KEYS[2]
-- release channel, KEYS[3] latch key; ARGV[1] release message, ARGV[2]
-- lease ms, ARGV[3] owner id, ARGV[4] publish command, ARGV[5] latch ms.
local recorded = redis.call('get', KEYS[3])
if recorded ~= false then
    return tonumber(recorded)
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if counter > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    redis.call('set', KEYS[3], 0, 'px', ARGV[5])
    return 0
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[1])
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
return 1
