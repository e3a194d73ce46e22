-- release(id): KEYS [name, channel, timeouts], ARGV [id, 1, now, publishCmd].
-- Returns the permit even when its lease had run out, but then replies 0.
local expiry = redis.call('zscore', KEYS[3], ARGV[1]);
if tonumber(redis.call('zrem', KEYS[3], ARGV[1])) ~= 1 then
    return 0;
end;
local count = redis.call('incrby', KEYS[1], ARGV[2]);
redis.call(ARGV[4], KEYS[2], count);
if tonumber(expiry) <= tonumber(ARGV[3]) then
    return 0;
end;
return 1;
