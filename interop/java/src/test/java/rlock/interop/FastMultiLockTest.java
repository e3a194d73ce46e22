package rlock.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;

/**
 * Redisson's fast multi-lock (getMultiLock(group, values), 3.38+): one hash
 * for the group, each value a field. Its watchdog's renewal (FastMultilockTask
 * from 3.44) runs natively as RFASTMULTI.RENEW, and keeps the lock held over
 * several watchdog periods in either mode.
 */
class FastMultiLockTest extends RedissonTest {
    /** Looked up by name, so that this compiles with every tested Redisson. */
    private RLock fastMultiLock(String group, Collection<Object> values) throws Exception {
        return (RLock) RedissonClient.class.getMethod("getMultiLock", String.class, Collection.class)
                .invoke(redisson, group, values);
    }

    @Test
    void theWatchdogKeepsAFastMultiLockOverSeveralPeriodsNativelyInNativeMode(TestInfo info) throws Exception {
        assumeTrue(atLeast(3, 44), "the fast multi-lock's watchdog renewal (FastMultilockTask) is 3.44+");
        String group = name(info, "group");
        List<Object> values = List.of("a", "b", "c");
        RLock lock = fastMultiLock(group, values);
        long nativeBefore = rlockInfo("rlock_redisson_native_fast_multi");
        long callsBefore = commandCalls("rfastmulti.renew");
        lock.lock();
        long lockedAt = System.nanoTime();
        // Four raises of the TTL: more than twice the first lease.
        awaitRenewals(group, 4);
        long heldMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - lockedAt);
        assertTrue(heldMs > WATCHDOG_MS, "held " + heldMs + " ms, past its first lease");
        assertTrue(lock.isLocked());
        boolean otherTook = CompletableFuture.supplyAsync(() -> {
            try {
                return fastMultiLock(group, List.of("b")).tryLock(0, 30, TimeUnit.SECONDS);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }).get(10, TimeUnit.SECONDS);
        assertFalse(otherTook, "another thread cannot take a value of the held group");
        long renewals = rlockInfo("rlock_redisson_native_fast_multi") - nativeBefore;
        long calls = commandCalls("rfastmulti.renew") - callsBefore;
        lock.unlock();
        assertFalse(lock.isLocked());
        if (RlockServer.mode().equals("native")) {
            assertTrue(renewals >= 4, "the renewals ran natively: " + renewals);
            assertEquals(renewals, calls, "each as RFASTMULTI.RENEW");
        } else {
            assertEquals(0, renewals + calls, "with redisson-scripts off, the renewal runs as Lua");
        }
    }
}
