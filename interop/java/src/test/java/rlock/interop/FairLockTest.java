package rlock.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.redisson.api.RLock;

/**
 * Redisson's fair lock alone: waiters get it in arrival order, with its
 * scripts run as Lua, or natively (RFAIR.*, RlockServer.mode() native).
 */
class FairLockTest extends RedissonTest {
    private static final int WAITERS = 6;

    @Test
    void fifoOrder(TestInfo info) throws Exception {
        String name = name(info, "fair");
        long nativeBefore = rlockInfo("rlock_redisson_native_fair");
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
                    RlockServer.sleep(20); // a while inside: the next waiters queue up behind
                    lock.unlock();
                }, runnable -> new Thread(runnable).start()));
                // Enqueued before the next one starts: the arrival order is known.
                eventually("waiter " + me + " queued",
                        () -> (Long) resp.cmd("LLEN", "redisson_lock_queue:{" + name + "}") >= me + 1);
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
        // Every lock and unlock (at least) ran as RFAIR.*.
        assertNativeCalls(nativeBefore, 2 * (WAITERS + 1));
    }

    /** tryLock() without a wait (its own script), and forceUnlock, by another thread. */
    @Test
    void tryLockWithoutWaitAndForceUnlock(TestInfo info) throws Exception {
        RLock lock = redisson.getFairLock(name(info, "fair"));
        long nativeBefore = rlockInfo("rlock_redisson_native_fair");
        lock.lock();
        assertFalse(CompletableFuture.supplyAsync(lock::tryLock).get(5, TimeUnit.SECONDS), "held by another thread");
        assertTrue(lock.tryLock(), "reentered");
        assertEquals(2, lock.getHoldCount());
        assertTrue(CompletableFuture.supplyAsync(lock::forceUnlock).get(5, TimeUnit.SECONDS));
        assertFalse(lock.isLocked());
        assertFalse(lock.forceUnlock(), "nothing left to force");
        assertTrue(CompletableFuture.supplyAsync(() -> {
            boolean taken = lock.tryLock();
            lock.unlock();
            return taken;
        }).get(5, TimeUnit.SECONDS), "free again");
        assertNativeCalls(nativeBefore, 7);
    }

    /**
     * A waiter in the middle gives up (tryLock's wait runs out: Redisson's
     * give-up script, which names only the queue; under a hash-tagged name
     * the queue tells the lock, and it runs as RFAIR.CANCEL): the others
     * keep their order.
     */
    @Test
    void aWaiterInTheMiddleGivesUpUnderAHashTag(TestInfo info) throws Exception {
        aWaiterInTheMiddleGivesUp("{" + name(info, "fair") + "}:lock");
    }

    /**
     * The same without braces: the queue key of {@code n} is also {@code {n}}'s,
     * and natively RFAIR.CANCEL tells the lock by the state (its hash).
     */
    @Test
    void aWaiterInTheMiddleGivesUpWithoutBraces(TestInfo info) throws Exception {
        long unnamed = rlockInfo("rlock_redisson_fair_unnamed");
        aWaiterInTheMiddleGivesUp(name(info, "fair"));
        assertEquals(unnamed, rlockInfo("rlock_redisson_fair_unnamed"), "the lock told by its hash");
    }

    private void aWaiterInTheMiddleGivesUp(String name) throws Exception {
        RLock lock = redisson.getFairLock(name);
        long nativeBefore = rlockInfo("rlock_redisson_native_fair");
        lock.lock();
        List<String> order = Collections.synchronizedList(new ArrayList<>());
        List<CompletableFuture<Boolean>> waiters = new ArrayList<>();
        try (Resp resp = server.resp()) {
            for (String tag : List.of("A", "quitter", "B")) {
                waiters.add(CompletableFuture.supplyAsync(() -> {
                    try {
                        // In ms: tryLock(wait, unit) without a lease sends `wait` to the
                        // script as if in ms (RedissonLock.tryAcquireAsync), so 1 s would be 1 ms.
                        if (!lock.tryLock(tag.equals("quitter") ? 1000 : 20_000, TimeUnit.MILLISECONDS)) {
                            return false;
                        }
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                    order.add(tag);
                    lock.unlock();
                    return true;
                }, runnable -> new Thread(runnable).start()));
                long queued = waiters.size();
                eventually(tag + " queued", () -> (Long) resp.cmd("LLEN", queue(name)) >= queued);
            }
            assertFalse(waiters.get(1).get(5, TimeUnit.SECONDS), "the quitter gives up while the lock is held");
            assertEquals(2L, resp.cmd("LLEN", queue(name)), "the quitter left the queue");
        }
        lock.unlock();
        assertTrue(waiters.get(0).get(20, TimeUnit.SECONDS) && waiters.get(2).get(20, TimeUnit.SECONDS));
        assertEquals(List.of("A", "B"), order);
        // lock, 3 queued, give-up, 2 grants, 3 unlocks: at least.
        assertNativeCalls(nativeBefore, 10);
        if (RlockServer.mode().equals("native")) {
            assertTrue(cancels() > 0, "the give-up ran as RFAIR.CANCEL");
        }
    }

    /** Redisson's queue key of the fair lock {@code name}: braces added when it has none. */
    private static String queue(String name) {
        return "redisson_lock_queue:" + (name.contains("{") ? name : "{" + name + "}");
    }

    /** How many RFAIR.CANCEL calls the server ran (INFO commandstats). */
    private long cancels() {
        try (Resp resp = server.resp()) {
            String stats = (String) resp.cmd("INFO", "commandstats");
            for (String line : stats.split("\r\n")) {
                if (line.startsWith("cmdstat_rfair.cancel:calls=")) {
                    return Long.parseLong(line.split("calls=")[1].split(",")[0]);
                }
            }
            return 0;
        }
    }

    /** At least {@code calls} fair-lock scripts ran as RFAIR.* since {@code before}; none with Lua. */
    private void assertNativeCalls(long before, long calls) {
        long nativeCalls = rlockInfo("rlock_redisson_native_fair") - before;
        if (RlockServer.mode().equals("native")) {
            assertTrue(nativeCalls >= calls, nativeCalls + " fair-lock calls ran natively, expected " + calls);
        } else {
            assertEquals(0, nativeCalls, "Lua mode runs no script natively");
        }
    }
}
