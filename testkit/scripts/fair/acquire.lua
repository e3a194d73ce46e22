-- Redisson's fair tryLock, waiting form, written from the family protocol
-- doc §2. KEYS: name, queue, deadlines. ARGV: lease ms, owner, wait ms,
-- now ms. Replies nil when acquired, else a hint; queues the caller.
local WAIT, NOW = tonumber(ARGV[3]), tonumber(ARGV[4])
--PURGE--
--GRANT--
if redis.call('zscore', KEYS[3], ARGV[2]) ~= false then
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
if redis.call('zadd', KEYS[3], base + WAIT + NOW, ARGV[2]) == 1 then
    redis.call('rpush', KEYS[2], ARGV[2])
end
return base
