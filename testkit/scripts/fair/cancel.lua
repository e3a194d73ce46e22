-- Redisson's fair give-up (acquireFailed), from the family protocol doc §2.
-- KEYS: queue, deadlines. ARGV: owner, wait ms.
local queue = redis.call('lrange', KEYS[1], 0, -1)
local after = false
for i = 1, #queue do
    if after then
        redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), queue[i])
    elseif queue[i] == ARGV[1] then
        after = true
    end
end
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('lrem', KEYS[1], 0, ARGV[1])
return nil
