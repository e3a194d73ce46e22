-- tryAcquire(n, expiry): KEYS [name, timeouts, channel],
-- ARGV [n, expiry, now, neverExpires, publishCmd, id_1 ... id_n].
-- Reclaims up to n expired permits; takes n permits if there are enough
-- (the permits take the count's TTL); else replies ':' .. the earliest
-- expiry, unless it never expires (nil).
local reclaimed = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, ARGV[1]);
if #reclaimed > 0 then
    redis.call('zrem', KEYS[2], unpack(reclaimed));
    local count = redis.call('incrby', KEYS[1], #reclaimed);
    if tonumber(count) > 0 then
        redis.call(ARGV[5], KEYS[3], count);
    end;
end;
local available = redis.call('get', KEYS[1]);
if available ~= false and tonumber(available) >= tonumber(ARGV[1]) then
    redis.call('decrby', KEYS[1], ARGV[1]);
    for i = 6, #ARGV do
        redis.call('zadd', KEYS[2], ARGV[2], ARGV[i]);
    end;
    local ttl = redis.call('pttl', KEYS[1]);
    if ttl > 0 then
        redis.call('pexpire', KEYS[2], ttl);
    end;
    return 'OK';
end;
local first = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES');
if first[1] ~= nil and first[2] ~= ARGV[4] then
    return ':' .. tostring(first[2]);
end;
return nil;
