-- addPermits: KEYS [name, channel], ARGV [delta, publishCmd]. A plain SET:
-- the key's TTL is dropped.
local value = redis.call('get', KEYS[1]);
if (value == false) then
    value = 0;
end;
redis.call('set', KEYS[1], value + ARGV[1]);
redis.call(ARGV[2], KEYS[2], value + ARGV[1]);
