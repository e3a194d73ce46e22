package rlock.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;

/** RLock through Redisson's public API alone. */
class LockTest extends RedissonTest {

    private static boolean onOtherThread(java.util.function.Supplier<Boolean> work) {
        return CompletableFuture.supplyAsync(work).join();
    }

    @Test
    void lockReentryAndUnlock(TestInfo info) {
        RLock lock = redisson.getLock(name(info, "lock"));
        assertFalse(lock.isLocked());
        lock.lock();
        assertTrue(lock.isLocked());
        assertTrue(lock.isHeldByCurrentThread());
        assertEquals(1, lock.getHoldCount());
        long ttl = lock.remainTimeToLive();
        assertTrue(ttl > 0 && ttl <= WATCHDOG_MS, "remainTimeToLive " + ttl);

        // Redisson's layout: a hash, one field <uuid>:<threadId> -> hold count.
        try (Resp resp = server.resp()) {
            assertEquals("hash", resp.cmd("TYPE", lock.getName()));
            @SuppressWarnings("unchecked")
            List<Object> fields = (List<Object>) resp.cmd("HGETALL", lock.getName());
            assertEquals(2, fields.size(), "one owner field");
            assertTrue(((String) fields.get(0)).endsWith(":" + Thread.currentThread().getId()));
            assertEquals("1", fields.get(1));
        }

        lock.lock();
        assertEquals(2, lock.getHoldCount());
        assertFalse(onOtherThread(lock::isHeldByCurrentThread));
        assertFalse(onOtherThread(lock::tryLock), "another thread is another owner");
        lock.unlock();
        assertEquals(1, lock.getHoldCount());
        assertTrue(lock.isLocked());
        lock.unlock();
        assertFalse(lock.isLocked());
        assertEquals(0, lock.getHoldCount());
        assertEquals(-2, lock.remainTimeToLive());
        assertThrows(IllegalMonitorStateException.class, lock::unlock);
    }

    @Test
    void tryLockWithWaitAndLease(TestInfo info) throws Exception {
        RLock lock = redisson.getLock(name(info, "lock"));
        assertTrue(lock.tryLock(0, 400, TimeUnit.MILLISECONDS));
        long ttl = lock.remainTimeToLive();
        assertTrue(ttl > 0 && ttl <= 400, "lease 400 ms, remainTimeToLive " + ttl);
        // Another thread waits; nobody unlocks, so it gets in when the lease runs out.
        long start = System.nanoTime();
        boolean got = onOtherThread(() -> {
            try {
                boolean ok = lock.tryLock(10_000, 1000, TimeUnit.MILLISECONDS);
                if (ok) {
                    lock.unlock();
                }
                return ok;
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        long waitedMs = (System.nanoTime() - start) / 1_000_000;
        assertTrue(got, "the lease ran out and the waiter got in");
        assertTrue(waitedMs >= 250, "waited " + waitedMs + " ms for a 400 ms lease");
        assertFalse(lock.isHeldByCurrentThread());
        // A wait that runs out.
        lock.lock();
        assertFalse(onOtherThread(() -> {
            try {
                return lock.tryLock(200, 1000, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }));
        lock.unlock();
    }

    @Test
    void waiterWokenByUnlock(TestInfo info) throws Exception {
        String name = name(info, "lock");
        RLock lock = redisson.getLock(name);
        // A lease far longer than the bound below: a waiter woken by it would be far too late.
        lock.lock(60, TimeUnit.SECONDS);
        CompletableFuture<Long> waiter = CompletableFuture.supplyAsync(() -> {
            lock.lock();
            long at = System.nanoTime();
            lock.unlock();
            return at;
        });
        awaitSubscribers(lockChannel(name), 1);
        assertFalse(waiter.isDone());
        long released = System.nanoTime();
        lock.unlock();
        long latencyMs = (waiter.get(20, TimeUnit.SECONDS) - released) / 1_000_000;
        assertTrue(latencyMs < 10_000, "woken by the release message, not the lease: " + latencyMs + " ms");
    }

    @Test
    void forceUnlock(TestInfo info) throws Exception {
        String name = name(info, "lock");
        RedissonClient other = client();
        try {
            RLock theirs = other.getLock(name);
            theirs.lock();
            RLock ours = redisson.getLock(name);
            assertTrue(ours.isLocked());
            assertFalse(ours.isHeldByCurrentThread());
            assertTrue(ours.forceUnlock());
            assertFalse(ours.isLocked());
            assertFalse(ours.forceUnlock(), "nothing left to force");
            assertThrows(IllegalMonitorStateException.class, theirs::unlock);
            assertTrue(ours.tryLock());
            ours.unlock();
        } finally {
            other.shutdown();
        }
    }

    @Test
    void watchdogRenewsOverSeveralPeriods(TestInfo info) throws Exception {
        String name = name(info, "lock");
        RLock lock = redisson.getLock(name);
        lock.lock();
        // Time must pass: four renewals (every third of a timeout) outlast the first lease.
        awaitRenewals(name, 4);
        long ttl = lock.remainTimeToLive();
        assertTrue(ttl > 0 && ttl <= WATCHDOG_MS, "renewed, remainTimeToLive " + ttl);
        assertTrue(lock.isHeldByCurrentThread());
        assertFalse(onOtherThread(lock::tryLock));
        lock.unlock();
        assertFalse(lock.isLocked());
        // A lock taken with a lease is not renewed.
        lock.lock(300, TimeUnit.MILLISECONDS);
        eventually("a leased lock ends with its lease (renewed, it would live on)", () -> !lock.isLocked());
    }
}
