package rlock.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.redisson.api.RLock;

/** Redisson's fair lock alone (its Lua scripts): waiters get it in arrival order. */
class FairLockTest extends RedissonTest {
    private static final int WAITERS = 6;

    @Test
    void fifoOrder(TestInfo info) throws Exception {
        String name = name(info, "fair");
        RLock lock = redisson.getFairLock(name);
        lock.lock();
        List<Integer> order = Collections.synchronizedList(new ArrayList<>());
        List<CompletableFuture<Void>> waiters = new ArrayList<>();
        try (Resp resp = server.resp()) {
            for (int i = 0; i < WAITERS; i++) {
                int me = i;
                waiters.add(CompletableFuture.runAsync(() -> {
                    lock.lock();
                    order.add(me);
                    RlockServer.sleep(20);
                    lock.unlock();
                }, runnable -> new Thread(runnable).start()));
                // Enqueued before the next one starts: the arrival order is known.
                long deadline = System.currentTimeMillis() + 5000;
                while ((Long) resp.cmd("LLEN", "redisson_lock_queue:{" + name + "}") < i + 1) {
                    assertTrue(System.currentTimeMillis() < deadline, "waiter " + i + " never queued");
                    Thread.sleep(5);
                }
            }
        }
        lock.unlock();
        for (CompletableFuture<Void> waiter : waiters) {
            waiter.get(20, TimeUnit.SECONDS);
        }
        List<Integer> expected = new ArrayList<>();
        for (int i = 0; i < WAITERS; i++) {
            expected.add(i);
        }
        assertEquals(expected, order);
    }
}
