-- lockAndGetToken / tryLockAndGetToken: KEYS [name, tokenKey], ARGV [leaseMs, owner]
if ((redis.call('exists', KEYS[1]) == 0)
        or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then
    local token = redis.call('incr', KEYS[2]);
    redis.call('hincrby', KEYS[1], ARGV[2], 1);
    redis.call('pexpire', KEYS[1], ARGV[1]);
    return {-1, token};
end;
return {redis.call('pttl', KEYS[1]), -1};
