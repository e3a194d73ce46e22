-- release(ids), 3.41+: KEYS [name, channel, timeouts],
-- ARGV [count, now, publishCmd, id_1 ... id_n]. All or nothing: 0 when an
-- id is missing or expired; else reclaims every expired permit, returns the
-- ids and publishes how many.
local ids = {};
for i = 4, #ARGV do
    local expiry = redis.call('zscore', KEYS[3], ARGV[i]);
    if expiry == false or tonumber(expiry) <= tonumber(ARGV[2]) then
        return 0;
    end;
    table.insert(ids, ARGV[i]);
end;
local reclaimed = redis.call('zrangebyscore', KEYS[3], 0, ARGV[2]);
if #reclaimed > 0 then
    redis.call('zrem', KEYS[3], unpack(reclaimed));
    local count = redis.call('incrby', KEYS[1], #reclaimed);
    if tonumber(count) > 0 then
        redis.call(ARGV[3], KEYS[2], count);
    end;
end;
local removed = redis.call('zrem', KEYS[3], unpack(ids));
redis.call('incrby', KEYS[1], removed);
redis.call(ARGV[3], KEYS[2], removed);
return removed;
