-- getLeaseTime(id): KEYS [name, timeouts, channel],
-- ARGV [id, neverExpires, now, publishCmd]. -1 never expires, the ms left,
-- 0 unknown.
-- Reclaims every expired permit first.
local reclaimed = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3]);
if #reclaimed > 0 then
    redis.call('zrem', KEYS[2], unpack(reclaimed));
    local count = redis.call('incrby', KEYS[1], #reclaimed);
    if tonumber(count) > 0 then
        redis.call(ARGV[4], KEYS[3], count);
    end;
end;
local expiry = redis.call('zscore', KEYS[2], ARGV[1]);
if expiry == false then
    return 0;
end;
if tonumber(expiry) == tonumber(ARGV[2]) then
    return -1;
end;
return tonumber(expiry) - tonumber(ARGV[3]);
