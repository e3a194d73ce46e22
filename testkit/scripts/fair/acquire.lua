-- Redisson's fair tryLock, written from the family protocol doc §2.
-- KEYS: name, queue, deadlines. ARGV: lease ms, owner, wait ms, now ms,
-- and a 5th: "wait" (waiting form) or "nowait" (replies 1 instead of
-- queueing; Redisson swaps ARGV 3 and 4 there, which changes nothing else).
local NOW = tonumber(ARGV[4])
--PURGE--
local wait = tonumber(ARGV[3])
if redis.call('exists', KEYS[1]) == 0
    and (redis.call('exists', KEYS[2]) == 0 or redis.call('lindex', KEYS[2], 0) == ARGV[2]) then
    redis.call('lpop', KEYS[2])
    redis.call('zrem', KEYS[3], ARGV[2])
    local waiters = redis.call('zrange', KEYS[3], 0, -1)
    for i = 1, #waiters do
        redis.call('zincrby', KEYS[3], -wait, waiters[i])
    end
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
end
if ARGV[5] == 'nowait' then
    return 1
end
local queued = redis.call('zscore', KEYS[3], ARGV[2])
if queued ~= false then
    local ttl = redis.call('pttl', KEYS[1])
    if ttl < 0 then ttl = 0 end
    return ttl
end
local tail = redis.call('lindex', KEYS[2], -1)
local base
local tail_deadline = tail ~= false and tail ~= ARGV[2] and redis.call('zscore', KEYS[3], tail)
if tail_deadline then
    base = tonumber(tail_deadline) - NOW
else
    base = redis.call('pttl', KEYS[1])
end
local deadline = base + wait + NOW
if redis.call('zadd', KEYS[3], deadline, ARGV[2]) == 1 then
    redis.call('rpush', KEYS[2], ARGV[2])
end
return base
