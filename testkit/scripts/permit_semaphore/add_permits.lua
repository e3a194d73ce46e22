-- addPermits(d): KEYS [name, channel], ARGV [d, publishCmd]. A plain SET
-- (the TTL is dropped); publishes d only when positive.
local available = redis.call('get', KEYS[1]);
if available == false then
    available = 0;
end;
redis.call('set', KEYS[1], tonumber(available) + tonumber(ARGV[1]));
if tonumber(ARGV[1]) > 0 then
    redis.call(ARGV[2], KEYS[2], ARGV[1]);
end;
return nil;
