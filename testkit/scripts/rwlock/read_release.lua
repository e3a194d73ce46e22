-- Redisson's read unlock with the unlock latch, from the family protocol
-- doc §3 and §0.5. KEYS: name, channel, timeout prefix, key prefix, latch.
-- ARGV: message, owner, publish command, latch ms.
local recorded = redis.call('get', KEYS[5])
if recorded ~= false then
    return tonumber(recorded)
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call(ARGV[3], KEYS[2], ARGV[1])
    redis.call('set', KEYS[5], 1, 'px', ARGV[4])
    return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
    return nil
end
local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if counter == 0 then
    redis.call('hdel', KEYS[1], ARGV[2])
end
redis.call('del', KEYS[3] .. ':' .. (counter + 1))
if redis.call('hlen', KEYS[1]) > 1 then
    local longest = -3
    for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
        local holds = tonumber(redis.call('hget', KEYS[1], field))
        if type(holds) == 'number' then
            for i = holds, 1, -1 do
                local ttl = redis.call('pttl', KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. i)
                longest = math.max(ttl, longest)
            end
        end
    end
    if longest > 0 then
        redis.call('pexpire', KEYS[1], longest)
        redis.call('set', KEYS[5], 0, 'px', ARGV[4])
        return 0
    end
    if mode == 'write' then
        redis.call('set', KEYS[5], 0, 'px', ARGV[4])
        return 0
    end
end
redis.call('del', KEYS[1])
redis.call(ARGV[3], KEYS[2], ARGV[1])
redis.call('set', KEYS[5], 1, 'px', ARGV[4])
return 1
