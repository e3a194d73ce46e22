package rlock.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RLock;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RSemaphore;

/** Java (Redisson) and Rust (rlock-client, interop/rust-peer) on one name. */
class InteropTest extends PeerTest {
    private static final int HANDOFF_ROUNDS = 15;
    /** Each side's lease in the hand-offs: a waiter woken by its end would be far later than the bound. */
    private static final long HANDOFF_LEASE_MS = 60_000;
    /** A hand-off woken by the release message, not by the lease running out. */
    private static final long HANDOFF_BOUND_MS = 10_000;

    /** Waits until one more rlock-client caller than {@code before} is blocked on the server. */
    private void awaitRustBlocked(long before) {
        eventually("the rlock-client waiter blocked on the server", () -> rlockInfo("rlock_blocked") > before);
    }

    private static long nowMicros() {
        java.time.Instant now = java.time.Instant.now();
        return now.getEpochSecond() * 1_000_000 + now.getNano() / 1000;
    }

    @Test
    void mutualExclusionUnderLoad(TestInfo info) throws Exception {
        SharedCounter.incrementAndCheck(redisson, rust, name(info, "lock"), name(info, "counter"), 3, 3, 60, 60);
    }

    @Test
    void handOffBothWays(TestInfo info) throws Exception {
        String base = name(info, "lock");
        List<Long> rustToJava = new ArrayList<>();
        List<Long> javaToRust = new ArrayList<>();
        for (int round = 0; round < HANDOFF_ROUNDS; round++) {
            // A name per round: its channel has no subscriber left from the round before.
            String name = base + ":" + round;
            RLock lock = redisson.getLock(name);
            // Rust holds, a Java thread waits, Rust releases.
            rust.call("lock lock " + name + " " + HANDOFF_LEASE_MS);
            CompletableFuture<Long> javaWaiter = CompletableFuture.supplyAsync(() -> {
                lock.lock();
                long at = nowMicros();
                lock.unlock();
                return at;
            });
            awaitSubscribers(lockChannel(name), 1);
            assertFalse(javaWaiter.isDone(), "Rust holds the lock");
            long released = Long.parseLong(rust.call("unlock " + name));
            rustToJava.add(javaWaiter.get(30, TimeUnit.SECONDS) - released);

            // Java holds, Rust waits, Java releases.
            lock.lock(HANDOFF_LEASE_MS, TimeUnit.MILLISECONDS);
            long blocked = rlockInfo("rlock_blocked");
            CompletableFuture<String> rustWaiter = rust.callAsync("lock lock " + name);
            awaitRustBlocked(blocked);
            assertFalse(rustWaiter.isDone(), "Java holds the lock");
            long javaReleased = nowMicros();
            lock.unlock();
            long acquired = Long.parseLong(rustWaiter.get(30, TimeUnit.SECONDS).split(" ")[0]);
            javaToRust.add(acquired - javaReleased);
            rust.call("unlock " + name);
        }
        long p50RustToJava = median(rustToJava);
        long p50JavaToRust = median(javaToRust);
        System.out.printf("[Redisson %s on %s] hand-off p50: rlock release -> Redisson waiter %.2f ms, "
                + "Redisson unlock -> rlock waiter %.2f ms (max %.2f / %.2f ms, %d rounds)%n",
                version(), RlockServer.serverBin(), p50RustToJava / 1000.0, p50JavaToRust / 1000.0,
                rustToJava.stream().mapToLong(Long::longValue).max().getAsLong() / 1000.0,
                javaToRust.stream().mapToLong(Long::longValue).max().getAsLong() / 1000.0, HANDOFF_ROUNDS);
        for (long us : rustToJava) {
            assertTrue(us < HANDOFF_BOUND_MS * 1000, "rlock -> Redisson hand-offs (us): " + rustToJava);
        }
        for (long us : javaToRust) {
            assertTrue(us < HANDOFF_BOUND_MS * 1000, "Redisson -> rlock hand-offs (us): " + javaToRust);
        }
    }

    @Test
    void reentrantHoldsAreInvisibleToTheOtherSide(TestInfo info) throws Exception {
        String name = name(info, "lock");
        RLock lock = redisson.getLock(name);
        lock.lock();
        lock.lock();
        assertEquals("0", rust.call("trylock lock " + name + " 0"));
        lock.unlock();
        assertEquals("0", rust.call("trylock lock " + name + " 0"), "Java still holds once");
        lock.unlock();
        assertEquals("1 0", rust.call("trylock lock " + name + " 1000"));
        assertEquals("1 0", rust.call("trylock lock " + name + " 0"), "Rust re-enters");
        assertEquals("2", rust.call("held " + name));
        assertFalse(CompletableFuture.supplyAsync(lock::tryLock).join());
        rust.call("unlock " + name);
        assertFalse(CompletableFuture.supplyAsync(lock::tryLock).join(), "Rust still holds once");
        assertTrue(lock.isLocked());
        assertFalse(lock.isHeldByCurrentThread());
        rust.call("unlock " + name);
        assertFalse(lock.isLocked());
        assertTrue(lock.tryLock());
        lock.unlock();
    }

    @Test
    void javaSeesAndForceUnlocksARustHold(TestInfo info) throws Exception {
        String name = name(info, "lock");
        RLock lock = redisson.getLock(name);
        rust.call("lock lock " + name);
        assertTrue(lock.isLocked());
        assertFalse(lock.isHeldByCurrentThread());
        assertEquals(0, lock.getHoldCount());
        long ttl = lock.remainTimeToLive();
        assertTrue(ttl > 0 && ttl <= Peer.WATCHDOG_MS, "the rlock-client watchdog's lease, remainTimeToLive " + ttl);
        awaitRenewals(name, 2); // by rlock-client's watchdog (every third of its timeout)
        assertTrue(lock.forceUnlock());
        try {
            rust.call("unlock " + name);
            throw new AssertionError("rlock-client's release of a force-unlocked hold succeeded");
        } catch (IllegalStateException expected) {
            assertTrue(expected.getMessage().contains("not held"), expected.getMessage());
        }
        assertTrue(lock.tryLock());
        lock.unlock();
    }

    @Test
    void semaphorePermitsShared(TestInfo info) throws Exception {
        String name = name(info, "sem");
        RSemaphore semaphore = redisson.getSemaphore(name);
        assertTrue(semaphore.trySetPermits(2));
        rust.call("sem-acquire " + name + " 2");
        assertEquals(0, semaphore.availablePermits());
        assertFalse(semaphore.tryAcquire(100, TimeUnit.MILLISECONDS));
        // A Java waiter woken by an rlock release, and the reverse.
        String channel = "redisson_sc:{" + name + "}";
        CompletableFuture<Boolean> javaWaiter = CompletableFuture.supplyAsync(() -> {
            try {
                return semaphore.tryAcquire(2, 30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        awaitSubscribers(channel, 1);
        long attempts = scriptRuns("semaphore");
        rust.call("sem-release " + name + " 1");
        // Redisson 3.23.5 and newer try again on every release; 3.14.1 wakes its waiter only once the
        // released permits reach its ask, so there is no attempt to wait for.
        if (atLeast(3, 23)) {
            eventually("the Java waiter tried again on the release", () -> scriptRuns("semaphore") > attempts);
        }
        assertEquals(1, semaphore.availablePermits(), "one permit is not two");
        assertFalse(javaWaiter.isDone(), "one permit is not two");
        rust.call("sem-release " + name + " 1");
        assertTrue(javaWaiter.get(30, TimeUnit.SECONDS));
        CompletableFuture<String> rustWaiter = startWaiter(channel, () -> rust.callAsync("sem-try " + name + " 1 30000"));
        assertFalse(rustWaiter.isDone());
        semaphore.release();
        assertEquals("1", rustWaiter.get(30, TimeUnit.SECONDS));
        assertEquals(0, semaphore.availablePermits());
        semaphore.release();
        rust.call("sem-release " + name + " 1");
        assertEquals(2, semaphore.availablePermits());
    }

    @Test
    void permitSemaphoreShared(TestInfo info) throws Exception {
        String name = name(info, "psem");
        RPermitExpirableSemaphore semaphore = redisson.getPermitExpirableSemaphore(name);
        assertTrue(semaphore.trySetPermits(2));
        String first = rust.call("psem-acquire " + name + " 60000");
        String second = rust.call("psem-acquire " + name + " 60000");
        assertEquals(0, semaphore.availablePermits());
        // Two Java waiters, each woken by one RPSEM.RELEASE (its message).
        List<CompletableFuture<String>> waiters = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            waiters.add(CompletableFuture.supplyAsync(() -> {
                try {
                    // A wait far longer than the bound below: waited out, it would be far too late.
                    return semaphore.tryAcquire(60_000, 30_000, TimeUnit.MILLISECONDS);
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            }, runnable -> new Thread(runnable).start()));
        }
        String channel = "redisson_sc:{" + name + "}";
        awaitSubscribers(channel, 1);
        long start = System.nanoTime();
        rust.call("psem-release " + first);
        rust.call("psem-release " + second);
        List<String> javaIds = new ArrayList<>();
        for (CompletableFuture<String> waiter : waiters) {
            javaIds.add(waiter.get(60, TimeUnit.SECONDS));
        }
        long wokenMs = (System.nanoTime() - start) / 1_000_000;
        assertTrue(wokenMs < 10_000, "woken by the messages, not their wait: " + wokenMs + " ms");
        javaIds.forEach(id -> assertNotNull(id));
        // Rust waits; a Java release lets it in.
        CompletableFuture<String> rustWaiter = startWaiter(channel, () -> rust.callAsync("psem-acquire " + name + " 30000"));
        assertFalse(rustWaiter.isDone());
        semaphore.release(javaIds.get(0));
        String rustId = rustWaiter.get(30, TimeUnit.SECONDS);
        rust.call("psem-release " + rustId);
        semaphore.release(javaIds.get(1));
        assertEquals(2, semaphore.availablePermits());
    }

    @Test
    void latchCountedDownByTheOtherSide(TestInfo info) throws Exception {
        String name = name(info, "latch");
        RCountDownLatch latch = redisson.getCountDownLatch(name);
        // Rust counts down, Java waiters are released.
        assertTrue(latch.trySetCount(2));
        List<CompletableFuture<Boolean>> javaWaiters = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            javaWaiters.add(CompletableFuture.supplyAsync(() -> {
                try {
                    return latch.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            }, runnable -> new Thread(runnable).start()));
        }
        String channel = "redisson_countdownlatch__channel__{" + name + "}";
        awaitSubscribers(channel, 1);
        rust.call("latch-count-down " + name);
        rust.call("latch-count-down " + name);
        for (CompletableFuture<Boolean> waiter : javaWaiters) {
            assertTrue(waiter.get(30, TimeUnit.SECONDS));
        }
        // Java counts down, a Rust waiter is released.
        assertTrue(latch.trySetCount(1));
        CompletableFuture<String> rustWaiter = startWaiter(channel, () -> rust.callAsync("latch-wait " + name + " 30000"));
        assertFalse(rustWaiter.isDone());
        latch.countDown();
        assertEquals("1", rustWaiter.get(30, TimeUnit.SECONDS));
    }
}
