package rlock.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RSemaphore;

/** RSemaphore and RCountDownLatch alone. */
class SemaphoreTest extends RedissonTest {

    @Test
    void semaphore(TestInfo info) throws Exception {
        RSemaphore semaphore = redisson.getSemaphore(name(info, "sem"));
        assertTrue(semaphore.trySetPermits(2));
        assertFalse(semaphore.trySetPermits(5));
        semaphore.acquire();
        assertTrue(semaphore.tryAcquire());
        assertEquals(0, semaphore.availablePermits());
        assertFalse(semaphore.tryAcquire(100, TimeUnit.MILLISECONDS));
        // Three waiters, woken by releases (the message), not by polling.
        List<CompletableFuture<Void>> waiters = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            waiters.add(CompletableFuture.runAsync(() -> {
                try {
                    assertTrue(semaphore.tryAcquire(5, TimeUnit.SECONDS));
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            }, runnable -> new Thread(runnable).start()));
        }
        Thread.sleep(200);
        semaphore.release();
        semaphore.release(2);
        semaphore.release();
        CompletableFuture.allOf(waiters.toArray(new CompletableFuture<?>[0])).get(3, TimeUnit.SECONDS);
        assertEquals(1, semaphore.availablePermits());
        semaphore.addPermits(2);
        assertEquals(3, semaphore.availablePermits());
        assertEquals(3, semaphore.drainPermits());
    }

    @Test
    void countDownLatchWakesWaiters(TestInfo info) throws Exception {
        RCountDownLatch latch = redisson.getCountDownLatch(name(info, "latch"));
        assertTrue(latch.trySetCount(2));
        assertFalse(latch.trySetCount(3));
        List<CompletableFuture<Boolean>> waiters = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            waiters.add(CompletableFuture.supplyAsync(() -> {
                try {
                    return latch.await(5, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            }, runnable -> new Thread(runnable).start()));
        }
        Thread.sleep(200);
        latch.countDown();
        assertEquals(1, latch.getCount());
        Thread.sleep(100);
        for (CompletableFuture<Boolean> waiter : waiters) {
            assertFalse(waiter.isDone(), "one count left");
        }
        long start = System.nanoTime();
        latch.countDown();
        for (CompletableFuture<Boolean> waiter : waiters) {
            assertTrue(waiter.get(3, TimeUnit.SECONDS));
        }
        assertTrue((System.nanoTime() - start) / 1_000_000 < 1000, "woken by the message");
        assertEquals(0, latch.getCount());
    }
}
