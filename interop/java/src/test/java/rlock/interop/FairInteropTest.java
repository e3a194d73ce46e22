package rlock.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import rlock.interop.FairQueue.Waiter;

/**
 * One fair-lock queue shared by Java and Rust: Redisson's fair-lock waiters
 * (its scripts) and rlock-client's (RFAIR.* natively, blocked on the server
 * or woken by pub/sub) queue in one list, {@code redisson_lock_queue:{name}},
 * and are granted in the order they arrived, whichever side each is on
 * (see {@link FairQueue} for how arrival and grant order are known).
 */
class FairInteropTest extends PeerTest {
    /**
     * A hand-off woken by the release (message or server grant), not by a hint or a lease running
     * out: 1 s for a loaded machine and 3 s for a process the side-by-side suite stalls (a hand-off
     * once took 2.5 s against 1 s). The holder's lease ({@link #HOLDER_LEASE_MS}) keeps every
     * waiter's hint far beyond it.
     */
    private static final long HANDOFF_BOUND_MS = 4000;
    /**
     * The first holder's lease. Each waiter's hint, which a waiter that missed its wake-up would
     * sleep, is this lease (the first queued) or more (the ones behind it). Under the watchdog's
     * lease (5 or 6 s, less the time since its renewal) the first waiter's hint could fall within
     * the bound.
     */
    private static final long HOLDER_LEASE_MS = 60_000;
    /** The tryLock wait of a waiter that gives up: long enough for the ones behind it to queue first. */
    private static final long GIVE_UP_MS = 1500;


    /** INFO rlock's rlock_granted: waiters granted the lock by the server (rlock-client's blocking mode). */
    private long granted() {
        return rlockInfo("rlock_granted");
    }

    /** The blocking Rust waiters were granted by the server (not by polling). */
    private void assertServerGrants(long before, List<Waiter> waiters) {
        long blocking = waiters.stream().filter(w -> w.tag.startsWith("B")).count();
        long grants = granted() - before;
        assertTrue(grants >= blocking, grants + " server grants for " + blocking + " blocking Rust waiters");
    }

    /**
     * A Rust holder, then 8 waiters alternating Java and Rust (blocking and
     * pub/sub Rust waiters in turn): granted in arrival order across both
     * sides, each within the bound of the release before it.
     */
    @Test
    void oneQueueSharedInArrivalOrder(TestInfo info) throws Exception {
        FairQueue fair = new FairQueue(redisson, rust, name(info, "fair"));
        rust.call("lock fair " + fair.name + " " + HOLDER_LEASE_MS);
        long grantedBefore = granted();
        List<Waiter> waiters = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            Waiter waiter = i % 2 == 0 ? fair.java("J" + i, -1)
                    : i % 4 == 1 ? fair.rust("B" + i, "block", -1) : fair.rust("P" + i, "pubsub", -1);
            waiters.add(fair.queued(waiter));
        }
        // Each one queued: refused while the Rust holder holds.
        for (Waiter waiter : waiters) {
            assertFalse(waiter.isJava() && waiter.java.isDone(), "the Rust holder still holds: " + waiter.tag);
        }
        assertEquals(fair.queued, fair.queue(), "nobody left the queue while it was held");
        long released = Long.parseLong(rust.call("unlock " + fair.name));
        fair.awaitAll(waiters);
        FairQueue.report("queue (Rust holder, J/B/P alternating)", fair.checkGrants(waiters, released, HANDOFF_BOUND_MS));
        assertServerGrants(grantedBefore, waiters);
        fair.assertGone();
        assertFalse(fair.lock.isLocked());
    }

    /**
     * A Java holder; a Java waiter in the middle of a mixed queue gives up
     * (tryLock's wait runs out, Redisson's give-up script): it leaves the
     * queue, the others keep their places, and after the release the queue
     * goes on in arrival order without waiting for the one that left.
     */
    @Test
    void aJavaWaiterInTheMiddleGivesUp(TestInfo info) throws Exception {
        FairQueue fair = new FairQueue(redisson, rust, name(info, "fair"));
        fair.lock.lock(HOLDER_LEASE_MS, TimeUnit.MILLISECONDS);
        long grantedBefore = granted();
        List<Waiter> waiters = new ArrayList<>();
        Waiter quitter = null;
        for (String tag : List.of("J0", "B1", "P2", "J3", "B4", "J5", "P6")) {
            Waiter waiter = fair.queued(switch (tag.charAt(0)) {
                case 'J' -> fair.java(tag, tag.equals("J3") ? GIVE_UP_MS : -1);
                case 'B' -> fair.rust(tag, "block", -1);
                default -> fair.rust(tag, "pubsub", -1);
            });
            if (tag.equals("J3")) {
                quitter = waiter;
            } else {
                waiters.add(waiter);
            }
        }
        assertFalse(quitter.java.get(5, TimeUnit.SECONDS), "J3 gives up while the holder holds");
        fair.queued.remove(quitter.owner);
        assertEquals(fair.queued, fair.queue(), "J3 left; the others kept their places");
        long released = FairQueue.nowMicros();
        fair.lock.unlock();
        fair.awaitAll(waiters);
        FairQueue.report("queue after a Java give-up (Java holder)", fair.checkGrants(waiters, released, HANDOFF_BOUND_MS));
        assertServerGrants(grantedBefore, waiters);
        fair.assertGone();
    }

    /**
     * The same from the other side: a Rust holder, and two Rust waiters in
     * the middle (one blocking, one pub/sub) give up (try_lock's wait runs
     * out, RFAIR.CANCEL) between Redisson waiters, which keep their places
     * and are granted in order after the release.
     */
    @Test
    void rustWaitersInTheMiddleGiveUp(TestInfo info) throws Exception {
        FairQueue fair = new FairQueue(redisson, rust, name(info, "fair"));
        rust.call("lock fair " + fair.name + " " + HOLDER_LEASE_MS);
        List<Waiter> waiters = new ArrayList<>();
        List<Waiter> quitters = new ArrayList<>();
        for (String tag : List.of("J0", "B1", "J2", "P3", "J4", "B5")) {
            boolean quits = tag.equals("B1") || tag.equals("P3");
            Waiter waiter = fair.queued(switch (tag.charAt(0)) {
                case 'J' -> fair.java(tag, -1);
                case 'B' -> fair.rust(tag, "block", quits ? GIVE_UP_MS : -1);
                default -> fair.rust(tag, "pubsub", quits ? GIVE_UP_MS : -1);
            });
            (quits ? quitters : waiters).add(waiter);
        }
        for (Waiter quitter : quitters) {
            assertEquals("0", rust.call("task-wait " + quitter.tag + " 5000", 10_000), quitter.tag + " gives up");
            fair.queued.remove(quitter.owner);
        }
        // rlock-client cancels from a task, after try_lock returned: soon, not at once.
        long left = fair.awaitQueue(3000, "B1 and P3 left; the others kept their places");
        System.out.printf("[Redisson %s on %s] fair: the Rust give-ups left the queue %d ms after try_lock returned%n",
                version(), RlockServer.serverBin(), left);
        long released = Long.parseLong(rust.call("unlock " + fair.name));
        fair.awaitAll(waiters);
        FairQueue.report("queue after Rust give-ups (Rust holder)", fair.checkGrants(waiters, released, HANDOFF_BOUND_MS));
        fair.assertGone();
    }
}
