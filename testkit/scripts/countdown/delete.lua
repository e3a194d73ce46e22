-- delete: KEYS [name, channel], ARGV [newCountMessage (1), publishCmd]
if redis.call('del', KEYS[1]) == 1 then
    redis.call(ARGV[2], KEYS[2], ARGV[1]);
    return 1;
else
    return 0;
end;
