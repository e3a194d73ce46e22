-- Redisson's write lock tryLock, from the family protocol doc §3.
-- KEYS: name. ARGV: lease ms, owner:write.
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call('hset', KEYS[1], 'mode', 'write')
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    local ttl = redis.call('pttl', KEYS[1])
    redis.call('pexpire', KEYS[1], ttl + tonumber(ARGV[1]))
    return nil
end
return redis.call('pttl', KEYS[1])
