-- Redisson's batched watchdog renewal (3.44+), from the family protocol
-- doc §1. KEYS: lock names; ARGV: lease ms, then one owner per key.
-- Replies one 1 (renewed) or 0 (not held) per key.
local renewed = {}
for i = 1, #KEYS do
    if redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1 then
        redis.call('pexpire', KEYS[i], ARGV[1])
        renewed[i] = 1
    else
        renewed[i] = 0
    end
end
return renewed
