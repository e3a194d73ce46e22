package rlock.interop;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.TestWatcher;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * Base of every test class: the JVM's server (see {@link RlockServer}) and
 * one Redisson client per class with a short watchdog. Each test names its
 * objects with {@link #name} so tests never share keys. On a failure the
 * server's log is printed.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(RedissonTest.LogOnFailure.class)
public abstract class RedissonTest {
    /**
     * Redisson's lockWatchdogTimeout in these tests: a renewal every 667 ms, so that a test sees
     * several; a renewal may come more than a second late while the suite runs side by side.
     */
    public static final long WATCHDOG_MS = 2000;

    protected RlockServer server;
    protected RedissonClient redisson;

    @BeforeAll
    void startRedisson() {
        server = RlockServer.shared();
        redisson = client();
    }

    @AfterAll
    void stopRedisson() {
        if (redisson != null) {
            redisson.shutdown();
        }
    }

    /** Another Redisson client (another uuid: other owners). */
    protected RedissonClient client() {
        return client(server);
    }

    /** A Redisson client of another server than the shared one. */
    protected static RedissonClient client(RlockServer server) {
        Config config = new Config();
        config.setLockWatchdogTimeout(WATCHDOG_MS);
        config.useSingleServer()
                .setAddress(server.url())
                .setConnectionMinimumIdleSize(2)
                .setConnectionPoolSize(24)
                .setSubscriptionConnectionMinimumIdleSize(1);
        return Redisson.create(config);
    }

    /** A counter of INFO rlock (for example rlock_granted). */
    protected long rlockInfo(String field) {
        return rlockInfo(server, field);
    }

    /** A counter of {@code server}'s INFO rlock. */
    static long rlockInfo(RlockServer server, String field) {
        try (Resp resp = server.resp()) {
            String info = (String) resp.cmd("INFO", "rlock");
            for (String line : info.split("\r\n")) {
                if (line.startsWith(field + ":")) {
                    return Long.parseLong(line.substring(field.length() + 1).trim());
                }
            }
            throw new AssertionError("no " + field + " in INFO rlock:\n" + info);
        }
    }

    /** The calls of {@code command} the server ran (INFO commandstats), 0 when none. */
    protected long commandCalls(String command) {
        try (Resp resp = server.resp()) {
            String stats = (String) resp.cmd("INFO", "commandstats");
            String prefix = "cmdstat_" + command + ":calls=";
            return stats.lines().filter(line -> line.startsWith(prefix))
                    .mapToLong(line -> Long.parseLong(line.substring(prefix.length()).split(",")[0]))
                    .findFirst().orElse(0);
        }
    }

    /** Waits until the watchdog renewed {@code key} {@code count} times (its PTTL went back up), the key kept. */
    protected void awaitRenewals(String key, int count) throws InterruptedException {
        awaitRenewals(server, key, count);
    }

    /** {@link #awaitRenewals(String, int)} on {@code server}. */
    static void awaitRenewals(RlockServer server, String key, int count) throws InterruptedException {
        try (Resp resp = server.resp()) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
            long last = (Long) resp.cmd("PTTL", key);
            int renewals = 0;
            while (renewals < count) {
                assertTrue(System.nanoTime() < deadline, "the watchdog renewed " + renewals + " times in 15 s");
                long pttl = (Long) resp.cmd("PTTL", key);
                assertTrue(pttl > 0, "the key is kept: PTTL " + pttl);
                renewals += pttl > last ? 1 : 0;
                last = pttl;
                Thread.sleep(20);
            }
        }
    }

    /** A key name unique to this test. */
    protected static String name(TestInfo info, String what) {
        String method = info.getTestMethod().map(m -> m.getName()).orElse("test");
        return method + ":" + what + ":" + UUID.randomUUID().toString().substring(0, 8);
    }

    public static String version() {
        return System.getProperty("redisson.version", "?");
    }

    /** True when the Redisson under test is at least {@code major.minor}. */
    public static boolean atLeast(int major, int minor) {
        String[] parts = version().split("\\.");
        int ma = Integer.parseInt(parts[0]);
        int mi = Integer.parseInt(parts[1]);
        return ma > major || (ma == major && mi >= minor);
    }

    static long median(List<Long> values) {
        List<Long> sorted = values.stream().sorted().toList();
        return sorted.get(sorted.size() / 2);
    }

    /** Prints the server log when a test fails. */
    static final class LogOnFailure implements TestWatcher {
        @Override
        public void testFailed(ExtensionContext context, Throwable cause) {
            String log;
            try {
                log = RlockServer.shared().log();
            } catch (RuntimeException noServer) {
                return;
            }
            String[] lines = log.split("\n");
            int from = Math.max(0, lines.length - 60);
            System.err.println("---- " + context.getDisplayName() + " failed (Redisson " + version()
                    + ", " + RlockServer.serverBin() + "); server log tail:");
            for (int i = from; i < lines.length; i++) {
                System.err.println(lines[i]);
            }
            System.err.println("----");
        }
    }

    static <T> T orFail(Optional<T> value, String what) {
        return value.orElseThrow(() -> new AssertionError(what));
    }
}
