-- Redisson's fair unlock with the unlock latch, from the family protocol
-- doc §2 and §0.5. KEYS: name, queue, deadlines, channel, latch. ARGV:
-- message, lease ms, owner, now ms, publish command, latch ms.
local recorded = redis.call('get', KEYS[5])
if recorded ~= false then
    return tonumber(recorded)
end
local NOW = tonumber(ARGV[4])
--PURGE--
local function wake_head()
    local head = redis.call('lindex', KEYS[2], 0)
    if head ~= false then
        redis.call(ARGV[5], KEYS[4] .. ':' .. head, ARGV[1])
    end
end
if redis.call('exists', KEYS[1]) == 0 then
    wake_head()
    redis.call('set', KEYS[5], 1, 'px', ARGV[6])
    return 1
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil
end
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if counter > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2])
    redis.call('set', KEYS[5], 0, 'px', ARGV[6])
    return 0
end
redis.call('del', KEYS[1])
redis.call('set', KEYS[5], 1, 'px', ARGV[6])
wake_head()
return 1
