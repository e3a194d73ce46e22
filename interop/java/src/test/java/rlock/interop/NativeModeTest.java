package rlock.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.redisson.api.RLock;

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
}
