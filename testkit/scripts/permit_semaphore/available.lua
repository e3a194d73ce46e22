-- availablePermits: the count after the reclaim (the INCRBY's integer, else GET's bulk), 0 when missing.
-- KEYS [name, timeouts, channel], ARGV [now, publishCmd]; reclaims every
-- expired permit first.
local count = nil;
local reclaimed = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1]);
if #reclaimed > 0 then
    redis.call('zrem', KEYS[2], unpack(reclaimed));
    count = redis.call('incrby', KEYS[1], #reclaimed);
    if tonumber(count) > 0 then
        redis.call(ARGV[2], KEYS[3], count);
    end;
end;
if count ~= nil then
    return count;
end;
local available = redis.call('get', KEYS[1]);
if available == false then
    return 0;
end;
return available;
