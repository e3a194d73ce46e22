package rlock.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.redisson.api.RLock;
import org.redisson.api.RReadWriteLock;

/** Redisson's read-write lock alone. */
class ReadWriteLockTest extends RedissonTest {

    private static boolean tryOnOtherThread(RLock lock, long waitMs) {
        Supplier<Boolean> attempt = () -> {
            try {
                boolean got = lock.tryLock(waitMs, TimeUnit.MILLISECONDS);
                if (got) {
                    lock.unlock();
                }
                return got;
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        };
        return CompletableFuture.supplyAsync(attempt).join();
    }

    @Test
    void readersShareAndAWriterExcludes(TestInfo info) throws Exception {
        String name = name(info, "rw");
        RReadWriteLock rw = redisson.getReadWriteLock(name);
        // Two readers on two threads at once.
        CountDownLatch bothIn = new CountDownLatch(2);
        CountDownLatch leave = new CountDownLatch(1);
        CompletableFuture<?>[] readers = new CompletableFuture<?>[2];
        for (int i = 0; i < 2; i++) {
            readers[i] = CompletableFuture.runAsync(() -> {
                rw.readLock().lock();
                bothIn.countDown();
                try {
                    leave.await();
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
                rw.readLock().unlock();
            }, runnable -> new Thread(runnable).start());
        }
        assertTrue(bothIn.await(5, TimeUnit.SECONDS), "readers share");
        assertTrue(rw.readLock().isLocked());
        assertFalse(tryOnOtherThread(rw.writeLock(), 200), "a writer waits for readers");
        // A waiting writer gets in once the readers leave (woken by the message).
        CompletableFuture<Boolean> writer = CompletableFuture.supplyAsync(() -> tryOnOtherThread(rw.writeLock(), 5000));
        awaitSubscribers("redisson_rwlock:{" + name + "}", 1);
        leave.countDown();
        CompletableFuture.allOf(readers).get(5, TimeUnit.SECONDS);
        assertTrue(writer.get(6, TimeUnit.SECONDS));

        rw.writeLock().lock();
        assertTrue(rw.writeLock().isHeldByCurrentThread());
        assertFalse(tryOnOtherThread(rw.readLock(), 200), "readers wait for the writer");
        assertFalse(tryOnOtherThread(rw.writeLock(), 0));
        rw.writeLock().unlock();
        assertTrue(tryOnOtherThread(rw.readLock(), 1000));
    }

    @Test
    void readInsideWrite(TestInfo info) throws Exception {
        RReadWriteLock rw = redisson.getReadWriteLock(name(info, "rw"));
        rw.writeLock().lock();
        rw.readLock().lock();
        assertTrue(rw.readLock().isHeldByCurrentThread());
        assertEquals(1, rw.writeLock().getHoldCount());
        assertFalse(tryOnOtherThread(rw.readLock(), 0), "others still excluded");
        rw.writeLock().unlock();
        // Only the read hold is left: other readers get in, writers do not.
        assertTrue(tryOnOtherThread(rw.readLock(), 1000));
        assertFalse(tryOnOtherThread(rw.writeLock(), 0));
        rw.readLock().unlock();
        assertFalse(rw.readLock().isLocked());
        assertTrue(tryOnOtherThread(rw.writeLock(), 1000));
    }

    @Test
    void watchdogRenewsAReadLock(TestInfo info) throws Exception {
        String name = name(info, "rw");
        RReadWriteLock rw = redisson.getReadWriteLock(name);
        rw.readLock().lock();
        // Time must pass: four renewals (every third of a timeout) outlast the first lease.
        awaitRenewals(name, 4);
        assertTrue(rw.readLock().isHeldByCurrentThread());
        assertFalse(tryOnOtherThread(rw.writeLock(), 0));
        rw.readLock().unlock();
    }

    /**
     * Redisson's write re-entry (the TTL grows by the lease), isLocked of the
     * read lock and the watchdog's read renewal: natively, each as its RRW
     * command (INFO commandstats), with Redisson's semantics either way.
     */
    @Test
    void writeReEntryIsLockedAndReadRenewalRunNatively(TestInfo info) throws Exception {
        String name = name(info, "rw");
        RReadWriteLock rw = redisson.getReadWriteLock(name);
        long acquires = commandCalls("rrw.acquire");
        long readLocked = commandCalls("rrw.readlocked");
        long renewals = commandCalls("rrw.renew") + commandCalls("rrw.renewreads");
        rw.writeLock().lock(10, TimeUnit.SECONDS);
        rw.writeLock().lock(10, TimeUnit.SECONDS);
        long ttl = rw.writeLock().remainTimeToLive();
        assertTrue(ttl > 15_000 && ttl <= 20_000, "Redisson's re-entry adds the lease to the TTL: " + ttl);
        assertFalse(rw.readLock().isLocked(), "a writer alone");
        rw.readLock().lock(10, TimeUnit.SECONDS);
        // Before 3.24 isLocked reads only the mode (no script).
        assertEquals(atLeast(3, 24), rw.readLock().isLocked(), "the writer's read");
        rw.readLock().unlock();
        rw.writeLock().unlock();
        rw.writeLock().unlock();
        // Alone: Redisson 3.x's write unlock ends the renewal of the reads
        // its thread holds under the same name.
        rw.readLock().lock();
        awaitRenewals(name, 4);
        assertTrue(rw.readLock().isHeldByCurrentThread(), "the watchdog renewed the read hold");
        rw.readLock().unlock();
        assertFalse(rw.readLock().isLocked());
        if (RlockServer.mode().equals("native")) {
            assertTrue(commandCalls("rrw.acquire") - acquires >= 3, "the write and read acquires ran as RRW.ACQUIRE");
            if (atLeast(3, 24)) {
                assertTrue(commandCalls("rrw.readlocked") - readLocked >= 3, "isLocked ran as RRW.READLOCKED");
            }
            // 3.44 .. 4.3's batch renewal stays with Lua (docs/redisson.md).
            if (!atLeast(3, 44) || atLeast(4, 4)) {
                long renewed = commandCalls("rrw.renew") + commandCalls("rrw.renewreads") - renewals;
                assertTrue(renewed >= 1, "the read renewal ran natively");
            }
        } else {
            assertEquals(acquires, commandCalls("rrw.acquire"), "Lua mode runs no script natively");
        }
    }
}
