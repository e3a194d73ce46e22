package rlock.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;

/**
 * One fair-lock queue shared by Java and Rust waiters, as the tests see it
 * (FairInteropTest, ClusterTest). Each waiter is queued only once the one
 * before it is (seen in {@code redisson_lock_queue:{name}}), so the arrival
 * order is known. A waiter that gets the lock holds it {@link #HOLD_MS},
 * then, still holding, appends {@code tag acquired_us released_us} to a log
 * list and unlocks: the log is the grant order whatever side each waiter is
 * on, and its times bound each hand-off (one waiter's release to the next
 * one's grant; the log write is inside it). Keys are read through Redisson,
 * so a cluster routes them.
 */
final class FairQueue {
    static final long HOLD_MS = 20;

    /** One waiter: its tag (J Java, B Rust blocking, P Rust pub/sub), owner and outcome. */
    static final class Waiter {
        final String tag;
        /** A Java waiter's outcome (got the lock); null for a Rust one (the peer's task-wait). */
        final CompletableFuture<Boolean> java;
        final Predicate<String> owns;
        String owner;

        Waiter(String tag, CompletableFuture<Boolean> java, Predicate<String> owns) {
            this.tag = tag;
            this.java = java;
            this.owns = owns;
        }

        boolean isJava() {
            return java != null;
        }
    }

    private final RedissonClient redisson;
    private final Peer rust;
    final String name;
    final String logKey;
    final RLock lock;
    /** The owners queued so far, in arrival order. */
    final List<String> queued = new ArrayList<>();

    FairQueue(RedissonClient redisson, Peer rust, String name) {
        this.redisson = redisson;
        this.rust = rust;
        this.name = name;
        // In the lock's slot: one shard holds the whole scenario.
        this.logKey = "{" + name + "}:grants";
        this.lock = redisson.getFairLock(name);
    }

    static long nowMicros() {
        java.time.Instant now = java.time.Instant.now();
        return now.getEpochSecond() * 1_000_000 + now.getNano() / 1000;
    }

    List<String> queue() {
        return redisson.<String>getList("redisson_lock_queue:{" + name + "}", StringCodec.INSTANCE).readAll();
    }

    List<String> log() {
        return redisson.<String>getList(logKey, StringCodec.INSTANCE).readAll();
    }

    /** A Redisson waiter on a thread of its own: {@code lock()}, or {@code tryLock(tryMs)} when tryMs >= 0. */
    Waiter java(String tag, long tryMs) {
        CompletableFuture<Boolean> done = new CompletableFuture<>();
        Thread thread = new Thread(() -> {
            try {
                boolean got;
                if (tryMs < 0) {
                    lock.lock();
                    got = true;
                } else {
                    got = lock.tryLock(tryMs, TimeUnit.MILLISECONDS);
                }
                if (got) {
                    long acquired = nowMicros();
                    Thread.sleep(HOLD_MS); // holding a while, as a real critical section
                    redisson.getList(logKey, StringCodec.INSTANCE).add(tag + " " + acquired + " " + nowMicros());
                    lock.unlock();
                }
                done.complete(got);
            } catch (Throwable e) {
                done.completeExceptionally(e);
            }
        }, "fair-waiter-" + tag);
        thread.setDaemon(true);
        // Redisson's owner is "<client id>:<thread id>".
        String suffix = ":" + thread.getId();
        thread.start();
        return new Waiter(tag, done, owner -> owner.endsWith(suffix));
    }

    /** An rlock-client waiter in the peer (mode block or pubsub), in the background; tryLock when tryMs >= 0. */
    Waiter rust(String tag, String mode, long tryMs) {
        String owner = rust.call("fair-task " + tag + " " + name + " " + mode + " " + logKey + " " + HOLD_MS
                + (tryMs < 0 ? "" : " " + tryMs));
        return new Waiter(tag, null, owner::equals);
    }

    /** Waits until {@code waiter} is the queue's tail, behind exactly the owners queued before it. */
    Waiter queued(Waiter waiter) {
        List<List<String>> seen = new ArrayList<>(List.of(List.of()));
        RedissonTest.eventually("waiter " + waiter.tag + " queued behind " + queued, () -> {
            seen.set(0, queue());
            return seen.get(0).size() == queued.size() + 1 && waiter.owns.test(seen.get(0).get(queued.size()));
        });
        List<String> queue = seen.get(0);
        assertEquals(queued, queue.subList(0, queued.size()), "the waiters queued before " + waiter.tag);
        waiter.owner = queue.get(queued.size());
        queued.add(waiter.owner);
        return waiter;
    }

    /** Waits until the queue is {@link #queued}, at most boundMs; how long it took (ms). */
    long awaitQueue(long boundMs, String what) {
        long start = System.currentTimeMillis();
        RedissonTest.eventually(what + ": " + queued, Duration.ofMillis(boundMs), () -> queue().equals(queued));
        return System.currentTimeMillis() - start;
    }

    /** Waits for every waiter to be done (Java: its thread, Rust: the peer's task-wait). */
    void awaitAll(List<Waiter> waiters) throws Exception {
        for (Waiter waiter : waiters) {
            if (waiter.isJava()) {
                waiter.java.get(20, TimeUnit.SECONDS);
            } else {
                rust.call("task-wait " + waiter.tag + " 20000", 25_000);
            }
        }
    }

    /**
     * Checks the log against the waiters' order, each grant within boundMs
     * of the release before it (the first, of {@code releasedUs}). Returns
     * the hand-off times in µs.
     */
    List<Long> checkGrants(List<Waiter> expectedOrder, long releasedUs, long boundMs) {
        List<String> expected = expectedOrder.stream().map(w -> w.tag).toList();
        List<String> log = log();
        List<String> tags = new ArrayList<>();
        List<Long> handoffs = new ArrayList<>();
        long previousRelease = releasedUs;
        for (String entry : log) {
            String[] words = entry.split(" ");
            tags.add(words[0]);
            handoffs.add(Long.parseLong(words[1]) - previousRelease);
            previousRelease = Long.parseLong(words[2]);
        }
        assertEquals(expected, tags, "grant order (log " + log + ")");
        for (long us : handoffs) {
            assertTrue(us < boundMs * 1000, "hand-offs in grant order (us): " + handoffs);
        }
        return handoffs;
    }

    static void report(String what, List<Long> handoffs) {
        System.out.printf("[Redisson %s on %s] fair %s hand-off p50 %.2f ms, max %.2f ms (%d grants)%n",
                RedissonTest.version(), RlockServer.serverBin(), what, RedissonTest.median(handoffs) / 1000.0,
                handoffs.stream().mapToLong(Long::longValue).max().getAsLong() / 1000.0, handoffs.size());
    }

    void assertGone() {
        assertFalse(redisson.getList("redisson_lock_queue:{" + name + "}").isExists(), "the queue is gone with the last waiter");
        assertFalse(redisson.getScoredSortedSet("redisson_lock_timeout:{" + name + "}").isExists(),
                "the deadlines are gone with the last waiter");
    }
}
