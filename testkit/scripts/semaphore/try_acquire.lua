-- tryAcquire: KEYS [name], ARGV [permits]
local value = redis.call('get', KEYS[1]);
if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then
    redis.call('decrby', KEYS[1], ARGV[1]);
    return 1;
end;
return 0;
