-- updateLeaseTime(id, lease): KEYS [name, timeouts, channel],
-- ARGV [id, now + lease (or neverExpires), now, publishCmd]. 1 when the
-- permit is held (its expiry is replaced), else 0.
-- Reclaims every expired permit first.
local reclaimed = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3]);
if #reclaimed > 0 then
    redis.call('zrem', KEYS[2], unpack(reclaimed));
    local count = redis.call('incrby', KEYS[1], #reclaimed);
    if tonumber(count) > 0 then
        redis.call(ARGV[4], KEYS[3], count);
    end;
end;
if redis.call('zscore', KEYS[2], ARGV[1]) ~= false then
    redis.call('zadd', KEYS[2], ARGV[2], ARGV[1]);
    return 1;
end;
return 0;
