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
 * Which way Redisson's RLock scripts ran: natively (the module's command
 * filter, {@code rlock.mode=native}) or as Lua. Without this, a native run
 * whose scripts all fell back to Lua would pass unnoticed.
 */
class NativeModeTest extends RedissonTest {
    /** INFO rlock's count of RLock scripts run natively. */
    private long nativeLockCalls() {
        try (Resp resp = server.resp()) {
            String info = resp.cmd("INFO", "rlock").toString();
            return info.lines().filter(line -> line.startsWith("rlock_redisson_native_lock:"))
                    .mapToLong(line -> Long.parseLong(line.substring(line.indexOf(':') + 1).trim()))
                    .findFirst().orElseThrow(() -> new AssertionError("no rlock_redisson_native_lock in\n" + info));
        }
    }

    @Test
    void redissonsLockScriptsRunTheWayTheModeSays(TestInfo info) throws Exception {
        long before = nativeLockCalls();
        RLock lock = redisson.getLock(name(info, "lock"));
        assertTrue(lock.tryLock(1, 30, TimeUnit.SECONDS));
        lock.unlock();
        lock.forceUnlock();
        long ran = nativeLockCalls() - before;
        if (RlockServer.mode().equals("native")) {
            // tryLock, unlock and forceUnlock: each text of every tested release is in the filter's table.
            assertEquals(3, ran, "Redisson " + version() + "'s RLock scripts run natively");
        } else {
            assertEquals(0, ran, "with redisson-scripts off, Redisson's scripts run as Lua");
        }
    }

    /** {@code calls} RLock-family calls ran natively since {@code before}; none in Lua mode. */
    private void assertRanNatively(long before, long calls, String what) {
        long ran = nativeLockCalls() - before;
        if (RlockServer.mode().equals("native")) {
            assertEquals(calls, ran, "Redisson " + version() + "'s " + what + " ran natively");
        } else {
            assertEquals(0, ran, "with redisson-scripts off, Redisson's scripts run as Lua");
        }
    }

    /** A lock kind that not every tested Redisson has: looked up by name, so that this compiles with all. */
    private RLock lockOfKind(String getter, String name) throws Exception {
        return (RLock) RedissonClient.class.getMethod(getter, String.class).invoke(redisson, name);
    }

    @Test
    void theSpinLocksScriptsRunTheWayTheModeSays(TestInfo info) throws Exception {
        assumeTrue(atLeast(3, 15), "RSpinLock is 3.15+");
        long before = nativeLockCalls();
        RLock lock = lockOfKind("getSpinLock", name(info, "spin"));
        lock.lock(30, TimeUnit.SECONDS);
        lock.lock(30, TimeUnit.SECONDS);
        lock.unlock();
        assertTrue(lock.isHeldByCurrentThread(), "held once more");
        lock.unlock();
        assertFalse(lock.isLocked());
        lock.lock(30, TimeUnit.SECONDS);
        assertTrue(lock.forceUnlock());
        assertFalse(lock.isLocked());
        // Three acquires, two unlocks, a force unlock (isLocked and isHeldByCurrentThread are no scripts).
        assertRanNatively(before, 6, "spin lock scripts");
    }

    @Test
    void theNonReentrantLocksTryLockRunsTheWayTheModeSays(TestInfo info) throws Exception {
        assumeTrue(atLeast(4, 4), "the non-reentrant lock is 4.4+");
        long before = nativeLockCalls();
        RLock lock = lockOfKind("getNonReentrantLock", name(info, "non-reentrant"));
        assertTrue(lock.tryLock(0, 30, TimeUnit.SECONDS));
        assertThrows(IllegalMonitorStateException.class, () -> lock.tryLock(0, 30, TimeUnit.SECONDS),
                "Redisson's own error, natively too");
        assertEquals(1, lock.getHoldCount(), "not re-entered");
        boolean otherTook = CompletableFuture.supplyAsync(() -> {
            try {
                return lock.tryLock(0, 30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }).get(10, TimeUnit.SECONDS);
        assertFalse(otherTook, "another thread is refused");
        lock.unlock();
        assertFalse(lock.isLocked());
        // Three tryLocks and the unlock.
        assertRanNatively(before, 4, "non-reentrant lock scripts");
    }

    /**
     * The watchdog (lockWatchdogTimeout {@link #WATCHDOG_MS}: a renewal every third of it) keeps
     * a lock taken without a lease: from 3.44 with LockTask's batch renewal,
     * natively RLOCK.RENEWALL; before, RLOCK.RENEW.
     */
    @Test
    void theWatchdogsRenewalRunsTheWayTheModeSays(TestInfo info) throws Exception {
        String command = atLeast(3, 44) ? "rlock.renewall" : "rlock.renew";
        long renewalsBefore = commandCalls(command);
        String name = name(info, "watched");
        RLock lock = redisson.getLock(name);
        lock.lock();
        awaitRenewals(name, 2);
        long renewals = commandCalls(command) - renewalsBefore;
        lock.unlock();
        if (RlockServer.mode().equals("native")) {
            assertTrue(renewals >= 2, "Redisson " + version() + "'s watchdog renewed as " + command + ": " + renewals);
        } else {
            assertEquals(0, renewals, "with redisson-scripts off, the watchdog's script runs as Lua");
        }
    }

    /** INFO errorstats' count of {@code code} errors, 0 when none. */
    private long errors(String code) {
        try (Resp resp = server.resp()) {
            String stats = (String) resp.cmd("INFO", "errorstats");
            String prefix = "errorstat_" + code + ":count=";
            return stats.lines().filter(line -> line.startsWith(prefix))
                    .mapToLong(line -> Long.parseLong(line.substring(prefix.length()).trim()))
                    .findFirst().orElse(0);
        }
    }

    /**
     * A watched lock's key overwritten with a string: the batch renewal fails
     * (natively renewing none of its locks, as Lua renews those before that
     * key; docs/redisson.md, Errors), Redisson logs it, and its watchdog goes
     * on renewing once the key is gone. Its own client, with twice the
     * watchdog timeout: a renewal every 4 s, 8 s to spare. With the
     * class's then 5 s (3.3 s to spare) the suite once starved the client past
     * the lease of the lock taken after the refusal (PTTL -2, Redis 8.0,
     * native): the JVM frozen (SIGSTOP) from that lock for 5.5 s fails it
     * so in both modes, for 3.6 s in neither.
     */
    @Test
    void theWatchdogGoesOnAfterARenewalRefusedForAKeyOfAnotherType(TestInfo info) throws Exception {
        RedissonClient client = client(server, 2 * WATCHDOG_MS);
        try {
            String clobbered = name(info, "clobbered");
            RLock lock = client.getLock(clobbered);
            lock.lock();
            long before = errors("WRONGTYPE");
            try (Resp resp = server.resp()) {
                resp.cmd("SET", clobbered, "somebody else's");
                eventually("a renewal refused", () -> errors("WRONGTYPE") > before);
                resp.cmd("DEL", clobbered);
            }
            String name = name(info, "watched");
            RLock next = client.getLock(name);
            next.lock();
            awaitRenewals(name, 2);
            next.unlock();
            assertFalse(next.isLocked());
        } finally {
            client.shutdown();
        }
    }
}
