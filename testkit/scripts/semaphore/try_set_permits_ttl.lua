-- trySetPermits(permits, ttl): KEYS [name, channel], ARGV [permits, publishCmd, ttlMs]
local value = redis.call('get', KEYS[1]);
if (value == false) then
    redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[3]);
    redis.call(ARGV[2], KEYS[2], ARGV[1]);
    return 1;
end;
return 0;
