package rlock.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.redisson.api.RLock;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;

/**
 * Lock-delay ({@code rlock.lock-delay-ms}, docs/safety.md): natively, a
 * refusal during the delay looks like a lock held until its end, so
 * Redisson's lock() (an RLock's, a write lock's) waits it out by itself, and a semaphore's acquire()
 * (which waits for a release message with no timeout) is woken at its
 * end. Redisson's scripts run as Lua are not delayed.
 */
class LockDelayTest extends RedissonTest {
    private static final long LONG_MS = 600_000;
    private static final long DELAY_LEFT_MS = 3_000;

    @Test
    void redissonWaitsOutALockDelayByItself(TestInfo info) throws Exception {
        try (RlockServer own = RlockServer.start()) {
            RedissonClient client = client(own);
            try {
                RLock lock = client.getLock(name(info, "lock"));
                RLock writeLock = client.getReadWriteLock(name(info, "rw")).writeLock();
                RSemaphore semaphore = client.getSemaphore(name(info, "semaphore"));
                assertTrue(semaphore.trySetPermits(1));
                try (Resp resp = own.resp()) {
                    // The term began at the start: a delay ending soon from now.
                    resp.call("CONFIG", "SET", "rlock.lock-delay-ms", Long.toString(LONG_MS));
                    long elapsed = LONG_MS - delayLeft(resp);
                    resp.call("CONFIG", "SET", "rlock.lock-delay-ms", Long.toString(elapsed + DELAY_LEFT_MS));
                }
                CompletableFuture<Void> permit = CompletableFuture.runAsync(() -> {
                    try {
                        semaphore.acquire();
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                });
                CompletableFuture<Boolean> locked = CompletableFuture.supplyAsync(() -> {
                    lock.lock();
                    return lock.isHeldByCurrentThread();
                });
                CompletableFuture<Boolean> written = CompletableFuture.supplyAsync(() -> {
                    writeLock.lock();
                    return writeLock.isHeldByCurrentThread();
                });
                assertTrue(locked.get(30, TimeUnit.SECONDS), "lock() returned holding the lock");
                assertTrue(written.get(30, TimeUnit.SECONDS), "the write lock's lock() returned holding it");
                permit.get(30, TimeUnit.SECONDS);
                try (Resp resp = own.resp()) {
                    long refusals = infoField(resp, "rlock_lock_delay_refusals");
                    if (RlockServer.mode().equals("native")) {
                        assertEquals(0, delayLeft(resp), "both waited for the delay's end");
                        assertTrue(refusals >= 3, "the locks and the permit were refused first: " + refusals);
                    } else {
                        assertTrue(delayLeft(resp) > 0, "neither waited");
                        assertEquals(0, refusals, "Redisson's Lua scripts are not delayed");
                    }
                }
            } finally {
                client.shutdown();
            }
        }
    }

    private static long delayLeft(Resp resp) throws Exception {
        return infoField(resp, "rlock_lock_delay_left_ms");
    }

    private static long infoField(Resp resp, String field) throws Exception {
        String text = resp.call("INFO", "rlock").toString();
        return text.lines().filter(line -> line.startsWith(field + ":"))
                .mapToLong(line -> Long.parseLong(line.substring(field.length() + 1).trim()))
                .findFirst().orElseThrow(() -> new AssertionError("no " + field + " in\n" + text));
    }
}
