-- (included at the top of every fair script) Redisson's purge: drop dead
-- waiters from the head of the queue. KEYS[2] queue, KEYS[3] deadlines,
-- NOW the caller's clock.
while true do
    local head = redis.call('lindex', KEYS[2], 0)
    if head == false then
        break
    end
    local deadline = tonumber(redis.call('zscore', KEYS[3], head))
    if deadline == nil or deadline > NOW then
        break
    end
    redis.call('zrem', KEYS[3], head)
    redis.call('lpop', KEYS[2])
end
