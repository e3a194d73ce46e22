-- Redisson's read lock tryLock, from the family protocol doc §3.
-- KEYS: name, timeout prefix ({name}:owner:rwlock_timeout).
-- ARGV: lease ms, owner, owner:write.
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
    redis.call('hset', KEYS[1], 'mode', 'read')
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('set', KEYS[2] .. ':1', 1)
    redis.call('pexpire', KEYS[2] .. ':1', ARGV[1])
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
if mode == 'read' or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
    local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
    local key = KEYS[2] .. ':' .. n
    redis.call('set', key, 1)
    redis.call('pexpire', key, ARGV[1])
    local ttl = redis.call('pttl', KEYS[1])
    redis.call('pexpire', KEYS[1], math.max(ttl, tonumber(ARGV[1])))
    return nil
end
return redis.call('pttl', KEYS[1])
