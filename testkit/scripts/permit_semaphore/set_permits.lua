-- setPermits(n): KEYS [name, channel, timeouts], ARGV [n, publishCmd].
-- No reclaim: expired permits still count as taken.
local available = redis.call('get', KEYS[1]);
if available == false then
    redis.call('set', KEYS[1], ARGV[1]);
    redis.call(ARGV[2], KEYS[2], ARGV[1]);
    return nil;
end;
local total = tonumber(available) + redis.call('zcount', KEYS[3], 0, '+inf');
if total == tonumber(ARGV[1]) then
    return nil;
end;
redis.call('incrby', KEYS[1], tonumber(ARGV[1]) - total);
redis.call(ARGV[2], KEYS[2], ARGV[1]);
return nil;
