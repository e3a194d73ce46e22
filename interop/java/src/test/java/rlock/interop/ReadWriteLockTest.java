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
        RReadWriteLock rw = redisson.getReadWriteLock(name(info, "rw"));
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
        Thread.sleep(100);
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
        RReadWriteLock rw = redisson.getReadWriteLock(name(info, "rw"));
        rw.readLock().lock();
        Thread.sleep(3 * WATCHDOG_MS);
        assertTrue(rw.readLock().isHeldByCurrentThread());
        assertFalse(tryOnOtherThread(rw.writeLock(), 0));
        rw.readLock().unlock();
    }
}
