package rlock.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
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
 * end. A holder's re-entry waits the delay out too. Redisson's scripts run
 * as Lua are not delayed.
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
                delayEndingSoon(own);
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

    /**
     * The server cannot tell a hold from one whose release its old primary
     * took: the holding thread's tryLock() is refused (Lua's re-enters at
     * once), and its lock() waits for the delay's end and re-enters then.
     */
    @Test
    void aHoldersReentryWaitsOutALockDelay(TestInfo info) throws Exception {
        try (RlockServer own = RlockServer.start()) {
            RedissonClient client = client(own);
            ExecutorService holder = Executors.newSingleThreadExecutor();
            try {
                RLock lock = client.getLock(name(info, "held"));
                holder.submit((Runnable) lock::lock).get(30, TimeUnit.SECONDS);
                delayEndingSoon(own);
                boolean atOnce = holder.submit(() -> lock.tryLock()).get(30, TimeUnit.SECONDS);
                int holds = holder.submit(() -> {
                    lock.lock();
                    return lock.getHoldCount();
                }).get(30, TimeUnit.SECONDS);
                try (Resp resp = own.resp()) {
                    if (RlockServer.mode().equals("native")) {
                        assertFalse(atOnce, "tryLock() refused during the delay");
                        assertEquals(2, holds, "lock() re-entered at the delay's end");
                        assertEquals(0, delayLeft(resp));
                    } else {
                        assertTrue(atOnce, "Lua re-enters at once");
                        assertEquals(3, holds);
                    }
                }
            } finally {
                holder.shutdownNow();
                client.shutdown();
            }
        }
    }

    /** The term began at the server's start: sets a delay ending soon from now. */
    private static void delayEndingSoon(RlockServer own) throws Exception {
        try (Resp resp = own.resp()) {
            resp.call("CONFIG", "SET", "rlock.lock-delay-ms", Long.toString(LONG_MS));
            long elapsed = LONG_MS - delayLeft(resp);
            resp.call("CONFIG", "SET", "rlock.lock-delay-ms", Long.toString(elapsed + DELAY_LEFT_MS));
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
