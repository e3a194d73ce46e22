-- Redisson's fair forceUnlock, from the family protocol doc §2.
-- KEYS: name, queue, deadlines, channel. ARGV: message, now ms, publish command.
local NOW = tonumber(ARGV[2])
--PURGE--
if redis.call('del', KEYS[1]) == 1 then
    local head = redis.call('lindex', KEYS[2], 0)
    if head ~= false then
        redis.call(ARGV[3], KEYS[4] .. ':' .. head, ARGV[1])
    end
    return 1
end
return 0
