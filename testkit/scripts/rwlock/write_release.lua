-- Redisson's write unlock with the unlock latch, from the family protocol
-- doc §3 and §0.5. KEYS: name, channel, latch. ARGV: message, lease ms,
-- owner:write, publish command, latch ms.
local recorded = redis.call('get', KEYS[3])
if recorded ~= false then
    return tonumber(recorded)
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call(ARGV[4], KEYS[2], ARGV[1])
    redis.call('set', KEYS[3], 1, 'px', ARGV[5])
    return nil
end
if mode == 'write' then
    if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
        return nil
    end
    local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
    if counter > 0 then
        redis.call('pexpire', KEYS[1], ARGV[2])
        redis.call('set', KEYS[3], 0, 'px', ARGV[5])
        return 0
    end
    redis.call('hdel', KEYS[1], ARGV[3])
    if redis.call('hlen', KEYS[1]) == 1 then
        redis.call('del', KEYS[1])
        redis.call(ARGV[4], KEYS[2], ARGV[1])
    else
        redis.call('hset', KEYS[1], 'mode', 'read')
    end
    redis.call('set', KEYS[3], 1, 'px', ARGV[5])
    return 1
end
return nil
