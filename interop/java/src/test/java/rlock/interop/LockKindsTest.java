package rlock.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;

/**
 * Redisson's spin lock (3.15+) and non-reentrant lock (4.4+) as their users
 * rely on them, in either mode: natively their scripts become RLOCK.* calls
 * (the spin lock's unlocks publish nothing, the non-reentrant lock's re-entry
 * is refused with Redisson's own error).
 */
class LockKindsTest extends RedissonTest {
    /** A lock kind that not every tested Redisson has, looked up by name so that this compiles with all. */
    private RLock lockOfKind(String getter, String name) throws Exception {
        return (RLock) RedissonClient.class.getMethod(getter, String.class).invoke(redisson, name);
    }

    /** Script calls and their native forms, counted from INFO commandstats. */
    private long lockCalls() {
        try (Resp resp = server.resp()) {
            String stats = (String) resp.cmd("INFO", "commandstats");
            return stats.lines()
                    .filter(line -> line.startsWith("cmdstat_eval") || line.startsWith("cmdstat_rlock.acquire:"))
                    .mapToLong(line -> Long.parseLong(line.split("calls=")[1].split(",")[0])).sum();
        }
    }

    /** Waits until {@code count} more lock calls than {@code before} ran. */
    private void awaitLockCalls(long before, int count) {
        eventually(count + " contending attempts", () -> lockCalls() >= before + count);
    }

    private static CompletableFuture<Boolean> tryLockElsewhere(RLock lock, long waitSeconds) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                boolean took = lock.tryLock(waitSeconds, 30, TimeUnit.SECONDS);
                if (took) {
                    lock.unlock();
                }
                return took;
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
    }

    @Test
    void aSpinLockIsReentrantAndGoesToAPollingContenderOnUnlock(TestInfo info) throws Exception {
        assumeTrue(atLeast(3, 15), "RSpinLock is 3.15+");
        RLock lock = lockOfKind("getSpinLock", name(info, "spin"));
        lock.lock();
        lock.lock();
        assertEquals(2, lock.getHoldCount());
        long before = lockCalls();
        CompletableFuture<Boolean> contender = tryLockElsewhere(lock, 10);
        awaitLockCalls(before, 2);
        assertFalse(contender.isDone(), "the contender spins while the lock is held");
        lock.unlock();
        assertFalse(contender.isDone(), "still held once");
        lock.unlock();
        assertTrue(contender.get(10, TimeUnit.SECONDS), "the contender took it after the last unlock");
        assertFalse(lock.isLocked());
    }

    @Test
    void aSpinLocksLeaseRunsOutAndForceUnlockFreesIt(TestInfo info) throws Exception {
        assumeTrue(atLeast(3, 15), "RSpinLock is 3.15+");
        RLock lock = lockOfKind("getSpinLock", name(info, "spin"));
        lock.lock(300, TimeUnit.MILLISECONDS);
        assertTrue(tryLockElsewhere(lock, 10).get(10, TimeUnit.SECONDS), "taken once the 300 ms lease ran out");
        lock.lock();
        assertTrue(lock.forceUnlock());
        assertFalse(lock.isLocked());
        assertFalse(lock.forceUnlock(), "nothing left to force");
    }

    @Test
    void aNonReentrantLockRefusesItsHoldersReentryAndKeepsOneHold(TestInfo info) throws Exception {
        assumeTrue(atLeast(4, 4), "the non-reentrant lock is 4.4+");
        String name = name(info, "non-reentrant");
        RLock lock = lockOfKind("getNonReentrantLock", name);
        RLock sameName = lockOfKind("getNonReentrantLock", name);
        lock.lock();
        assertThrows(IllegalMonitorStateException.class, lock::lock);
        assertThrows(IllegalMonitorStateException.class, lock::tryLock);
        assertThrows(IllegalMonitorStateException.class, () -> lock.tryLock(100, TimeUnit.MILLISECONDS));
        assertThrows(IllegalMonitorStateException.class, sameName::lock, "another handle, the same thread");
        assertEquals(1, lock.getHoldCount(), "never re-entered");
        lock.unlock();
        assertFalse(lock.isLocked(), "one unlock frees it");
    }

    @Test
    void aNonReentrantLocksWaiterIsWokenByTheUnlock(TestInfo info) throws Exception {
        assumeTrue(atLeast(4, 4), "the non-reentrant lock is 4.4+");
        String name = name(info, "non-reentrant");
        RLock lock = lockOfKind("getNonReentrantLock", name);
        lock.lock();
        long before = lockCalls();
        CompletableFuture<Boolean> waiter = tryLockElsewhere(lock, 10);
        awaitLockCalls(before, 1);
        assertFalse(waiter.isDone(), "the waiter waits while the lock is held");
        long unlocked = System.nanoTime();
        lock.unlock();
        assertTrue(waiter.get(10, TimeUnit.SECONDS));
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - unlocked);
        assertTrue(tookMs < 5_000, "woken by the unlock's message, not by its 30 s lease: " + tookMs + " ms");
    }
}
