-- Redisson's fair tryLock, no-wait form, written from the family protocol
-- doc §2. KEYS: name, queue, deadlines. ARGV: lease ms, owner, now ms,
-- wait ms (3 and 4 swapped compared with the waiting form). Replies nil
-- when acquired, else 1; never queues.
local NOW, WAIT = tonumber(ARGV[3]), tonumber(ARGV[4])
--PURGE--
--GRANT--
return 1
