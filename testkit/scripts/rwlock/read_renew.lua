-- Redisson's read-side watchdog renewal (4.4+), from the family protocol
-- doc §3. KEYS: name_1, key prefix_1, name_2, key prefix_2, ...
-- ARGV: lease ms, then per name its owner count n and n owners. Renews
-- every read hold of each listed owner still in the hash, and the hash if
-- any is. Replies one 1 (renewed) or 0 per name.
local renewed = {}
local arg = 2
for k = 1, #KEYS, 2 do
    local alive = 0
    local owners = tonumber(ARGV[arg])
    for _ = 1, owners do
        arg = arg + 1
        local holds = tonumber(redis.call('hget', KEYS[k], ARGV[arg]))
        if holds ~= nil then
            alive = 1
            for n = holds, 1, -1 do
                redis.call('pexpire', KEYS[k + 1] .. ':' .. ARGV[arg] .. ':rwlock_timeout:' .. n, ARGV[1])
            end
        end
    end
    arg = arg + 1
    if alive == 1 then
        redis.call('pexpire', KEYS[k], ARGV[1])
    end
    renewed[#renewed + 1] = alive
end
return renewed
