-- Redisson's read- or write-side forceUnlock, from the family protocol doc
-- §3. KEYS: name, channel. ARGV: message (0 read, 1 write), publish
-- command, the mode that side deletes.
if redis.call('hget', KEYS[1], 'mode') == ARGV[3] then
    redis.call('del', KEYS[1])
    redis.call(ARGV[2], KEYS[2], ARGV[1])
    return 1
end
return 0
