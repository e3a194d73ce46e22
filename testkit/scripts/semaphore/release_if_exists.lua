-- releaseIfExists (4.0+): KEYS [name, channel], ARGV [permits, publishCmd]
local value = redis.call('get', KEYS[1]);
if (value == false) then
    return 0;
end;
value = redis.call('incrby', KEYS[1], ARGV[1]);
redis.call(ARGV[2], KEYS[2], value);
return 1;
