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
        String name = name(info, "sem");
        RSemaphore semaphore = redisson.getSemaphore(name);
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
                    assertTrue(semaphore.tryAcquire(30, TimeUnit.SECONDS));
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            }, runnable -> new Thread(runnable).start()));
        }
        awaitSubscribers("redisson_sc:{" + name + "}", 1);
        semaphore.release();
        semaphore.release(2);
        semaphore.release();
        CompletableFuture.allOf(waiters.toArray(new CompletableFuture<?>[0])).get(30, TimeUnit.SECONDS);
        assertEquals(1, semaphore.availablePermits());
        semaphore.addPermits(2);
        assertEquals(3, semaphore.availablePermits());
        assertEquals(3, semaphore.drainPermits());
    }

    @Test
    void countDownLatchWakesWaiters(TestInfo info) throws Exception {
        String name = name(info, "latch");
        RCountDownLatch latch = redisson.getCountDownLatch(name);
        assertTrue(latch.trySetCount(2));
        assertFalse(latch.trySetCount(3));
        List<CompletableFuture<Boolean>> waiters = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            waiters.add(CompletableFuture.supplyAsync(() -> {
                try {
                    // A wait far longer than the bound below: waited out, it would be far too late.
                    return latch.await(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            }, runnable -> new Thread(runnable).start()));
        }
        awaitSubscribers("redisson_countdownlatch__channel__{" + name + "}", 1);
        latch.countDown();
        assertEquals(1, latch.getCount());
        // The count down to 1 publishes nothing: nothing to wait for before looking.
        for (CompletableFuture<Boolean> waiter : waiters) {
            assertFalse(waiter.isDone(), "one count left");
        }
        long start = System.nanoTime();
        latch.countDown();
        for (CompletableFuture<Boolean> waiter : waiters) {
            assertTrue(waiter.get(60, TimeUnit.SECONDS));
        }
        long wokenMs = (System.nanoTime() - start) / 1_000_000;
        assertTrue(wokenMs < 10_000, "woken by the message: " + wokenMs + " ms");
        assertEquals(0, latch.getCount());
    }
}
