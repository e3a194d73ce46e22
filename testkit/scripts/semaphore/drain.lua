-- drainPermits: KEYS [name]. Replies the old value as a bulk string, or 0.
local value = redis.call('get', KEYS[1]);
if (value == false) then
    return 0;
end;
redis.call('set', KEYS[1], 0);
return value;
