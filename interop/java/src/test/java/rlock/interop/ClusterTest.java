package rlock.interop;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.TestWatcher;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.redisson.config.ClusterServersConfig;
import rlock.interop.FairQueue.Waiter;

/**
 * Cluster mode: a 3-primary cluster of servers with the module, Redisson
 * (cluster client, its default sharded subscription mode) and rlock-client
 * ({@code connect_cluster}) on one name. Redis 7 and Redisson 4 wait on the
 * lock's shard channel (SSUBSCRIBE): a test sees both sides' shard
 * subscriptions, and hand-offs within a bound well below any lease, so
 * every release reached the other side's waiters. The newest Redisson
 * only (4.x); the cluster lives for this class and is stopped after it,
 * also when it fails.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@ExtendWith(ClusterTest.LogOnFailure.class)
class ClusterTest {
    /** Each side's lease in the hand-offs: a waiter woken by its end would be far later than the bound. */
    private static final long HANDOFF_LEASE_MS = 60_000;
    /** A waiter woken by the release, not by the lease; generous, as the suite runs under load. */
    private static final long HANDOFF_BOUND_MS = 10_000;
    private static final int HANDOFF_ROUNDS = 5;

    private static RlockCluster cluster;
    private RedissonClient redisson;
    private Peer rust;

    @BeforeAll
    void start() {
        assumeTrue(RedissonTest.atLeast(4, 0), "cluster mode runs for the newest Redisson (4.x)");
        long start = System.currentTimeMillis();
        cluster = RlockCluster.start(3);
        Config config = new Config();
        config.setLockWatchdogTimeout(RedissonTest.WATCHDOG_MS);
        ClusterServersConfig servers = config.useClusterServers()
                .setScanInterval(2000)
                .setTimeout(RedissonTest.RESPONSE_TIMEOUT_MS)
                .setMasterConnectionMinimumIdleSize(2)
                .setSubscriptionConnectionMinimumIdleSize(1);
        cluster.urls().forEach(servers::addNodeAddress);
        redisson = Redisson.create(config);
        rust = new Peer(String.join(",", cluster.urls()), Peer.WATCHDOG_MS);
        System.out.printf("[Redisson %s on %s] cluster of 3 primaries up in %d ms%n", RedissonTest.version(),
                RlockServer.serverBin(), System.currentTimeMillis() - start);
    }

    @AfterAll
    void stop() {
        try {
            if (rust != null) {
                rust.close();
            }
            if (redisson != null) {
                redisson.shutdown();
            }
        } finally {
            if (cluster != null) {
                cluster.close();
                cluster = null;
            }
        }
    }

    private static String name(String what) {
        return "cluster:" + what + ":" + UUID.randomUUID().toString().substring(0, 8);
    }

    /** The shard channels some node has subscribers on (PUBSUB SHARDCHANNELS on every node). */
    @SuppressWarnings("unchecked")
    private static Set<String> shardChannels() {
        Set<String> channels = new HashSet<>();
        for (RlockServer node : cluster.nodes()) {
            try (Resp resp = node.resp()) {
                channels.addAll((List<String>) resp.cmd("PUBSUB", "SHARDCHANNELS"));
            }
        }
        return channels;
    }

    /** Waits until nobody is subscribed to {@code channel}, then starts a waiter and waits until it subscribed. */
    private static <T> T startWaiter(String channel, String who, Supplier<T> start) {
        RedissonTest.eventually("nobody left subscribed to " + channel, () -> !shardChannels().contains(channel));
        T waiter = start.get();
        RedissonTest.eventually(who + " waits with a shard subscription to " + channel,
                () -> shardChannels().contains(channel));
        return waiter;
    }

    /** Java and Rust tasks increment an unprotected counter under one lock; no update is lost. */
    @Test
    void mutualExclusionUnderLoad() throws Exception {
        String name = name("lock");
        SharedCounter.incrementAndCheck(redisson, rust, name, "{" + name + "}:counter", 2, 2, 40, 30);
    }

    /**
     * Hand-off both ways: a Java waiter woken by an rlock release and an
     * rlock waiter woken by a Redisson unlock, each on its shard channel
     * (seen in PUBSUB SHARDCHANNELS before the first release).
     */
    @Test
    void handOffBothWaysOnShardChannels() throws Exception {
        List<Long> rustToJava = new ArrayList<>();
        List<Long> javaToRust = new ArrayList<>();
        for (int round = 0; round < HANDOFF_ROUNDS; round++) {
            String name = name("lock");
            String channel = "redisson_lock__channel:{" + name + "}";
            RLock lock = redisson.getLock(name);
            rust.call("lock lock " + name + " " + HANDOFF_LEASE_MS);
            CompletableFuture<Long> javaWaiter = startWaiter(channel, "Redisson", () -> CompletableFuture.supplyAsync(() -> {
                lock.lock();
                long at = FairQueue.nowMicros();
                lock.unlock();
                return at;
            }));
            assertFalse(javaWaiter.isDone(), "Rust holds the lock");
            long released = Long.parseLong(rust.call("unlock " + name));
            rustToJava.add(javaWaiter.get(30, TimeUnit.SECONDS) - released);

            lock.lock(HANDOFF_LEASE_MS, TimeUnit.MILLISECONDS);
            // rlock-client's cluster waiter subscribes to the shard channel too.
            CompletableFuture<String> rustWaiter = startWaiter(channel, "rlock-client",
                    () -> rust.callAsync("lock lock " + name));
            assertFalse(rustWaiter.isDone(), "Java holds the lock");
            long javaReleased = FairQueue.nowMicros();
            lock.unlock();
            javaToRust.add(Long.parseLong(rustWaiter.get(30, TimeUnit.SECONDS).split(" ")[0]) - javaReleased);
            rust.call("unlock " + name);
        }
        System.out.printf("[Redisson %s on %s] cluster hand-off p50: rlock release -> Redisson waiter %.2f ms, "
                + "Redisson unlock -> rlock waiter %.2f ms (max %.2f / %.2f ms, %d rounds)%n",
                RedissonTest.version(), RlockServer.serverBin(), RedissonTest.median(rustToJava) / 1000.0,
                RedissonTest.median(javaToRust) / 1000.0,
                rustToJava.stream().mapToLong(Long::longValue).max().getAsLong() / 1000.0,
                javaToRust.stream().mapToLong(Long::longValue).max().getAsLong() / 1000.0, HANDOFF_ROUNDS);
        for (long us : rustToJava) {
            assertTrue(us < HANDOFF_BOUND_MS * 1000, "rlock -> Redisson hand-offs (us): " + rustToJava);
        }
        for (long us : javaToRust) {
            assertTrue(us < HANDOFF_BOUND_MS * 1000, "Redisson -> rlock hand-offs (us): " + javaToRust);
        }
    }

    /**
     * The fair lock's FIFO from Java in a cluster, in one queue with
     * rlock-client waiters (both client modes; a cluster client waits by
     * pub/sub in both): a Java holder, 6 waiters granted in arrival order.
     */
    @Test
    void fairLockFifo() throws Exception {
        FairQueue fair = new FairQueue(redisson, rust, name("fair"));
        fair.lock.lock();
        List<Waiter> waiters = new ArrayList<>();
        for (String tag : List.of("J0", "J1", "B2", "J3", "P4", "J5")) {
            waiters.add(fair.queued(switch (tag.charAt(0)) {
                case 'J' -> fair.java(tag, -1);
                case 'B' -> fair.rust(tag, "block", -1);
                default -> fair.rust(tag, "pubsub", -1);
            }));
        }
        long released = FairQueue.nowMicros();
        fair.lock.unlock();
        fair.awaitAll(waiters);
        FairQueue.report("queue in a cluster (Java holder)", fair.checkGrants(waiters, released, HANDOFF_BOUND_MS));
        fair.assertGone();
    }

    /** Prints the nodes' log tails when a test fails. */
    static final class LogOnFailure implements TestWatcher {
        @Override
        public void testFailed(ExtensionContext context, Throwable cause) {
            RlockCluster running = cluster;
            if (running == null) {
                return;
            }
            String[] lines = running.logs().split("\n");
            System.err.println("---- " + context.getDisplayName() + " failed (cluster, Redisson "
                    + RedissonTest.version() + ", " + RlockServer.serverBin() + "); node logs:");
            for (int i = Math.max(0, lines.length - 120); i < lines.length; i++) {
                System.err.println(lines[i]);
            }
            System.err.println("----");
        }
    }
}
