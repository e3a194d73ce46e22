package rlock.interop;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
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
     * Redisson's lockWatchdogTimeout in these tests: a renewal every 2 s, so that a test sees
     * several, with 4 s to spare: the side-by-side suite can stall a process for 2-3 s (with 5 s,
     * 3.3 s to spare, it once starved a client past its lease).
     */
    public static final long WATCHDOG_MS = 6000;

    /** How long a test waits for something the server should show soon (generous: the suite runs under load). */
    public static final Duration PATIENCE = Duration.ofSeconds(10);

    /**
     * Redisson's response timeout in these tests (its default is 3 s). Past it Redisson sends the
     * command again, and a script whose first send was only late then runs twice: a server stalled
     * 4.5 s during a re-entrant lock() left a hold count of 3 for 2 lock() calls, with 2 lock
     * scripts counted where 1 ran with this timeout (Redis 8.0, native, Redisson 3.23.5). The
     * suite can stall a process for 2-3 s: a test once counted 7 spin-lock scripts for 6 calls.
     */
    public static final int RESPONSE_TIMEOUT_MS = 10_000;

    protected RlockServer server;
    protected RedissonClient redisson;

    @BeforeAll
    void startRedisson() {
        server = RlockServer.shared();
        try {
            redisson = client();
        } catch (RuntimeException e) {
            throw new IllegalStateException("Redisson could not start on the server: " + server.describe(), e);
        }
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
        return client(server, WATCHDOG_MS);
    }

    /** A Redisson client of {@code server} whose lockWatchdogTimeout is {@code watchdogMs}. */
    protected static RedissonClient client(RlockServer server, long watchdogMs) {
        Config config = new Config();
        config.setLockWatchdogTimeout(watchdogMs);
        config.useSingleServer()
                .setAddress(server.url())
                .setTimeout(RESPONSE_TIMEOUT_MS)
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

    /**
     * Polls {@code condition} until it holds, failing with {@code what} after {@code patience}:
     * the one way these tests wait for what the server shows.
     */
    public static void eventually(String what, Duration patience, BooleanSupplier condition) {
        long deadline = System.nanoTime() + patience.toNanos();
        while (!condition.getAsBoolean()) {
            assertTrue(System.nanoTime() < deadline, "not within " + patience.toMillis() + " ms: " + what);
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted waiting for: " + what, e);
            }
        }
    }

    /** {@link #eventually(String, Duration, BooleanSupplier)} within {@link #PATIENCE}. */
    public static void eventually(String what, BooleanSupplier condition) {
        eventually(what, PATIENCE, condition);
    }

    /** How many clients subscribed to {@code channel} (PUBSUB NUMSUB). */
    static long subscribers(RlockServer server, String channel) {
        try (Resp resp = server.resp()) {
            return (Long) ((List<?>) resp.cmd("PUBSUB", "NUMSUB", channel)).get(1);
        }
    }

    /** Waits until {@code count} clients subscribed to {@code channel}: that many Redisson waiters wait. */
    protected void awaitSubscribers(String channel, long count) {
        eventually(count + " subscribed to " + channel, () -> subscribers(server, channel) >= count);
    }

    /**
     * Starts a waiter once nobody listens on {@code channel} (an earlier waiter's subscription
     * may outlive it briefly), then waits until the new one subscribed: it waits.
     */
    protected <T> T startWaiter(String channel, Supplier<T> start) {
        eventually("nobody left subscribed to " + channel, () -> subscribers(server, channel) == 0);
        T waiter = start.get();
        awaitSubscribers(channel, 1);
        return waiter;
    }

    /**
     * Runs of {@code family}'s Redisson scripts (rlock_redisson_native_semaphore, say), natively or
     * as Lua: a Redisson waiter's attempt shows here.
     */
    protected long scriptRuns(String family) {
        return rlockInfo("rlock_redisson_native_" + family) + commandCalls("evalsha") + commandCalls("eval");
    }

    /** The channel Redisson's waiters on lock {@code name} subscribe to. */
    static String lockChannel(String name) {
        return "redisson_lock__channel:{" + name + "}";
    }

    /** Waits until the watchdog renewed {@code key} {@code count} times (its PTTL went back up), the key kept. */
    protected void awaitRenewals(String key, int count) {
        awaitRenewals(server, key, count);
    }

    /** {@link #awaitRenewals(String, int)} on {@code server}. */
    static void awaitRenewals(RlockServer server, String key, int count) {
        try (Resp resp = server.resp()) {
            long[] last = {(Long) resp.cmd("PTTL", key)};
            int[] renewals = {0};
            eventually("the watchdog renewed " + key + " " + count + " times", Duration.ofSeconds(30), () -> {
                long pttl = (Long) resp.cmd("PTTL", key);
                assertTrue(pttl > 0, "the key is kept: PTTL " + pttl);
                renewals[0] += pttl > last[0] ? 1 : 0;
                last[0] = pttl;
                return renewals[0] >= count;
            });
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
