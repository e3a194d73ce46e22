package rlock.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.redisson.api.RPermitExpirableSemaphore;

/**
 * RPermitExpirableSemaphore alone, and against RPSEM.RELEASE: what each
 * publishes on {@code redisson_sc:{name}}, the message Redisson's
 * SemaphorePubSub turns into {@code Semaphore.release(min(waiting, n))}.
 */
class PermitSemaphoreTest extends RedissonTest {
    private static final long SHORT_LEASE_MS = 3000;

    @Test
    void leasesRunOut(TestInfo info) throws Exception {
        RPermitExpirableSemaphore semaphore = redisson.getPermitExpirableSemaphore(name(info, "psem"));
        assertTrue(semaphore.trySetPermits(2));
        // A lease long enough to outlast the checks below under load; it cannot end before leaseEnds.
        long leaseEnds = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(SHORT_LEASE_MS);
        String shortLease = semaphore.acquire(SHORT_LEASE_MS, TimeUnit.MILLISECONDS);
        String longLease = semaphore.tryAcquire(0, 60_000, TimeUnit.MILLISECONDS);
        assertNotNull(longLease);
        assertEquals(0, semaphore.availablePermits());
        assertNull(semaphore.tryAcquire());
        // Nobody releases: the waiter gets the permit when its lease runs out
        // (Redisson sleeps until the expiry the script replies), long before its own wait ends.
        String third = semaphore.tryAcquire(30_000, 5000, TimeUnit.MILLISECONDS);
        long lateMs = (System.nanoTime() - leaseEnds) / 1_000_000;
        assertNotNull(third, "the expired permit was reclaimed");
        assertTrue(lateMs >= -50 && lateMs < 15_000, "got the permit " + lateMs + " ms after the lease ended");
        assertThrows(RuntimeException.class, () -> semaphore.release(shortLease), "its lease ran out");
        semaphore.release(longLease);
        assertTrue(semaphore.tryRelease(third));
        assertEquals(2, semaphore.availablePermits());
    }

    @Test
    void waiterWokenByRelease(TestInfo info) throws Exception {
        String name = name(info, "psem");
        RPermitExpirableSemaphore semaphore = redisson.getPermitExpirableSemaphore(name);
        assertTrue(semaphore.trySetPermits(1));
        String held = semaphore.acquire();
        CompletableFuture<String> waiter = CompletableFuture.supplyAsync(() -> {
            try {
                // A wait far longer than the bound below: a waiter that waited it out would be far too late.
                return semaphore.tryAcquire(60_000, 5000, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        awaitSubscribers("redisson_sc:{" + name + "}", 1);
        assertFalse(waiter.isDone());
        long start = System.nanoTime();
        semaphore.release(held);
        assertNotNull(waiter.get(60, TimeUnit.SECONDS));
        long wokenMs = (System.nanoTime() - start) / 1_000_000;
        assertTrue(wokenMs < 10_000, "woken by the message: " + wokenMs + " ms");
    }

    /** Takes {@code ids} with RPSEM.TRYACQUIRE (never expiring), as rlock-client would. */
    private static byte[] rawId(int n) {
        byte[] id = new byte[16];
        id[15] = (byte) n;
        id[0] = (byte) 0xA5;
        return id;
    }

    private List<String> messagesDuring(String channel, Runnable action) throws Exception {
        try (Resp sub = server.resp()) {
            sub.call("SUBSCRIBE", channel);
            action.run();
            sub.send("PING");
            List<String> messages = new ArrayList<>();
            while (true) {
                @SuppressWarnings("unchecked")
                List<Object> push = (List<Object>) sub.read();
                if ("pong".equals(push.get(0))) {
                    return messages;
                }
                messages.add((String) push.get(2));
            }
        }
    }

    /**
     * RPSEM.RELEASE of one permit publishes the new available count, as
     * Redisson's release(id) script does, but only when it is positive, as
     * Redisson's reclaim does: a count of 0 or less lets no waiter in, and
     * SemaphorePubSub turns a negative message into Semaphore.release(-1),
     * which throws.
     */
    @Test
    void rpsemReleasePublishesOnlyAPositiveCount(TestInfo info) throws Exception {
        String name = name(info, "psem");
        RPermitExpirableSemaphore semaphore = redisson.getPermitExpirableSemaphore(name);
        assertTrue(semaphore.trySetPermits(3));
        try (Resp resp = server.resp()) {
            for (int i = 0; i < 3; i++) {
                assertEquals("OK", resp.cmd("RPSEM.TRYACQUIRE", name, -1, rawId(i)));
            }
            // Redisson's own view of permits rlock took.
            assertEquals(0, semaphore.availablePermits());
            // 3 taken, 1 in all: available -2 (Redisson's setPermits, 3.2x+, does the same).
            assertNull(resp.cmd("RPSEM.SETPERMITS", name, 1));
            assertEquals(-2, semaphore.availablePermits());
            String channel = "redisson_sc:{" + name + "}";
            List<String> messages = messagesDuring(channel, () -> {
                assertEquals(1L, resp.cmd("RPSEM.RELEASE", name, rawId(0))); // -> -1
                assertEquals(1L, resp.cmd("RPSEM.RELEASE", name, rawId(1))); // -> 0
            });
            assertEquals(List.of(), messages, "no message for a count of 0 or less");
            // A Redisson waiter (once the subscriber above is gone), then the release that lets it in.
            eventually("the listener above unsubscribed", () -> subscribers(server, channel) == 0);
            CompletableFuture<String> waiter = CompletableFuture.supplyAsync(() -> {
                try {
                    return semaphore.tryAcquire(5000, 5000, TimeUnit.MILLISECONDS);
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            awaitSubscribers(channel, 1);
            messages = messagesDuring(channel, () -> assertEquals(1L, resp.cmd("RPSEM.RELEASE", name, rawId(2))));
            assertEquals(List.of("1"), messages, "the new count, as Redisson's release(id)");
            String id = waiter.get(3, TimeUnit.SECONDS);
            assertNotNull(id, "woken by RPSEM.RELEASE");
            semaphore.release(id);
        }
    }

    /**
     * Pins what Redisson's own release(id) script publishes, the reference
     * for the test above: the new count, even when it is not positive. Lua
     * mode only (part 2 may run these scripts natively).
     */
    @Test
    void redissonReleasePublishesTheNewCountEvenWhenNegative(TestInfo info) throws Exception {
        assumeTrue(RlockServer.mode().equals("lua"));
        String name = name(info, "psem");
        RPermitExpirableSemaphore semaphore = redisson.getPermitExpirableSemaphore(name);
        assertTrue(semaphore.trySetPermits(3));
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            ids.add(semaphore.acquire());
        }
        try (Resp resp = server.resp()) {
            resp.cmd("DECRBY", name, 2); // as setPermits(1) would (3.2x+): available -2
        }
        List<String> messages = messagesDuring("redisson_sc:{" + name + "}", () -> {
            semaphore.release(ids.get(0));
            semaphore.release(ids.get(1));
            semaphore.release(ids.get(2));
        });
        assertEquals(List.of("-1", "0", "1"), messages);
        assertEquals(HexFormat.of().parseHex(ids.get(0)).length, 16);
    }
}
