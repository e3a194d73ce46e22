package rlock.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.condition.EnabledIf;
import org.redisson.Redisson;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RLock;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RReadWriteLock;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * docs/commands.md's {@code redisson} ACL recipe, run as documented
 * ({@link AclRecipe}) on a server of its own with the filter on: real
 * Redisson logged in as the recipe's user, with the connection setup a
 * service has (a client name, connection pings), runs a workload of every
 * kind on names under {@code app:}, and nothing is refused ({@code ACL LOG}
 * stays empty) while the scripts run natively; then the user cannot touch
 * other names nor run other commands. The tests run in order: the workload,
 * its checks, then the refusals, which {@code ACL LOG} records. A release
 * whose workload runs a text the filter leaves to Lua gets the documented
 * {@code redisson-lua-texts} line as well.
 *
 * <p>With the filter off (Lua mode) Redisson's scripts run their own
 * commands on the keys, which the recipe does not give: the class is
 * skipped, as the recipe says.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@EnabledIf(value = "filterOn", disabledReason = "the redisson recipe is for the filter on (redisson-scripts native); "
        + "with it off, Redisson's scripts need their own commands on the keys (docs/commands.md, Permissions)")
class AclRecipeTest {
    private static final long LEASE_S = 30;

    private RlockServer server;
    private Resp admin;
    private AclRecipe recipe;
    private RedissonClient app;

    static boolean filterOn() {
        return RlockServer.mode().equals("native");
    }

    @BeforeAll
    void applyTheRecipe() {
        server = RlockServer.start();
        admin = server.resp();
        recipe = AclRecipe.read("redisson");
        recipe.apply(admin);
        if (runsTextsLeftToLua()) {
            AclRecipe.read("redisson-lua-texts").apply(admin);
        }
        admin.cmd("ACL", "LOG", "RESET");
        Config config = new Config();
        config.setLockWatchdogTimeout(RedissonTest.WATCHDOG_MS);
        config.useSingleServer()
                .setAddress(server.url())
                .setUsername(recipe.user())
                .setPassword(recipe.password())
                .setClientName("app-service")
                .setTimeout(RedissonTest.RESPONSE_TIMEOUT_MS)
                // Pings within the test (30 s by default).
                .setPingConnectionInterval(200)
                .setConnectionMinimumIdleSize(2)
                .setConnectionPoolSize(8)
                .setSubscriptionConnectionMinimumIdleSize(1);
        app = Redisson.create(config);
    }

    @AfterAll
    void stop() {
        if (app != null) {
            app.shutdown();
        }
        if (admin != null) {
            admin.close();
        }
        if (server != null) {
            server.close();
        }
    }

    @Test
    @Order(1)
    void aLockAndWhatItTells() {
        RLock lock = app.getLock("app:lock");
        lock.lock(LEASE_S, TimeUnit.SECONDS);
        lock.lock(LEASE_S, TimeUnit.SECONDS);
        assertTrue(lock.isLocked());
        assertTrue(lock.isHeldByCurrentThread());
        assertEquals(2, lock.getHoldCount());
        long ttl = lock.remainTimeToLive();
        assertTrue(ttl > 0 && ttl <= LEASE_S * 1000, "remainTimeToLive " + ttl);
        lock.unlock();
        lock.unlock();
        assertFalse(lock.isLocked());
        lock.lock(LEASE_S, TimeUnit.SECONDS);
        assertTrue(lock.forceUnlock());
    }

    /** A waiter blocks, and is woken by the release's message long before its wait or the lease ends. */
    @Test
    @Order(2)
    void aWaiterIsWokenByTheRelease() throws Exception {
        RLock lock = app.getLock("app:wait");
        lock.lock(LEASE_S, TimeUnit.SECONDS);
        CompletableFuture<Long> waiter = inThread(() -> {
            long start = System.nanoTime();
            assertTrue(app.getLock("app:wait").tryLock(20, LEASE_S, TimeUnit.SECONDS), "the waiter took the lock");
            app.getLock("app:wait").unlock();
            return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        });
        awaitSubscribers("redisson_lock__channel:{app:wait}");
        lock.unlock();
        long waited = waiter.get(20, TimeUnit.SECONDS);
        assertTrue(waited < 10_000, "woken by the release, not by its wait's end: " + waited + " ms");
        assertFalse(lock.isLocked());
    }

    /** The watchdog keeps a lock taken without a lease. */
    @Test
    @Order(3)
    void theWatchdogRenews() throws Exception {
        RLock lock = app.getLock("app:watched");
        lock.lock();
        RedissonTest.awaitRenewals(server, "app:watched", 2);
        assertTrue(lock.isHeldByCurrentThread());
        lock.unlock();
    }

    /** Two threads take turns on a fair lock, never both inside. */
    /** The watchdog keeps a read hold taken without a lease. */
    @Test
    @Order(3)
    void theWatchdogRenewsAReadHold() throws Exception {
        RLock read = app.getReadWriteLock("app:rw-watched").readLock();
        read.lock();
        RedissonTest.awaitRenewals(server, "app:rw-watched", 2);
        read.unlock();
        assertFalse(read.isLocked());
    }

    @Test
    @Order(4)
    void twoThreadsShareAFairLock() throws Exception {
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger turns = new AtomicInteger();
        Runnable worker = () -> {
            RLock lock = app.getFairLock("app:fair");
            for (int i = 0; i < 5; i++) {
                lock.lock(LEASE_S, TimeUnit.SECONDS);
                try {
                    assertEquals(1, inside.incrementAndGet(), "alone inside");
                    turns.incrementAndGet();
                    RlockServer.sleep(10); // a while inside, for the other thread to try to get in
                    inside.decrementAndGet();
                } finally {
                    lock.unlock();
                }
            }
        };
        CompletableFuture.allOf(CompletableFuture.runAsync(worker), CompletableFuture.runAsync(worker))
                .get(30, TimeUnit.SECONDS);
        assertEquals(10, turns.get());
        assertFalse(app.getFairLock("app:fair").isLocked());
    }

    @Test
    @Order(5)
    void readersShareAndAWriterWaits() throws Exception {
        RReadWriteLock rw = app.getReadWriteLock("app:rw");
        rw.readLock().lock(LEASE_S, TimeUnit.SECONDS);
        boolean otherRead = inThread(() -> {
            RLock read = app.getReadWriteLock("app:rw").readLock();
            boolean took = read.tryLock(0, LEASE_S, TimeUnit.SECONDS);
            if (took) {
                read.unlock();
            }
            return took;
        }).get(10, TimeUnit.SECONDS);
        assertTrue(otherRead, "readers share");
        RLock otherWrite = app.getReadWriteLock("app:rw").writeLock();
        boolean write = inThread(() -> otherWrite.tryLock(0, LEASE_S, TimeUnit.SECONDS)).get(10, TimeUnit.SECONDS);
        assertFalse(write, "no writer while read");
        rw.readLock().unlock();
        rw.writeLock().lock(LEASE_S, TimeUnit.SECONDS);
        assertTrue(rw.writeLock().isHeldByCurrentThread());
        rw.writeLock().unlock();
        assertFalse(rw.writeLock().isLocked());
    }

    /** A permit is acquired, a second acquire blocks and is woken by the release. */
    @Test
    @Order(6)
    void aSemaphoresPermitsGoRound() throws Exception {
        RSemaphore semaphore = app.getSemaphore("app:sem");
        assertTrue(semaphore.trySetPermits(1));
        semaphore.acquire();
        assertEquals(0, semaphore.availablePermits());
        CompletableFuture<Boolean> second = inThread(() -> semaphore.tryAcquire(20, TimeUnit.SECONDS));
        awaitSubscribers("redisson_sc:{app:sem}");
        semaphore.release();
        assertTrue(second.get(20, TimeUnit.SECONDS), "woken by the release");
        semaphore.release();
        assertEquals(1, semaphore.availablePermits());
    }

    @Test
    @Order(7)
    void expirablePermitsAreAcquiredAndReleased() throws Exception {
        RPermitExpirableSemaphore semaphore = app.getPermitExpirableSemaphore("app:psem");
        assertTrue(semaphore.trySetPermits(2));
        String first = semaphore.acquire();
        String second = semaphore.tryAcquire(1, LEASE_S, TimeUnit.SECONDS);
        assertNotNull(second);
        assertEquals(0, semaphore.availablePermits());
        semaphore.release(first);
        semaphore.release(second);
        assertEquals(2, semaphore.availablePermits());
    }

    @Test
    @Order(8)
    void aLatchOpensForItsWaiter() throws Exception {
        RCountDownLatch latch = app.getCountDownLatch("app:latch");
        assertTrue(latch.trySetCount(2));
        CompletableFuture<Boolean> waiter = inThread(() -> latch.await(20, TimeUnit.SECONDS));
        awaitSubscribers("redisson_countdownlatch__channel__{app:latch}");
        latch.countDown();
        assertEquals(1, latch.getCount());
        latch.countDown();
        assertTrue(waiter.get(20, TimeUnit.SECONDS), "the waiter saw the latch open");
        assertEquals(0, latch.getCount());
    }

    /** RFencedLock is 3.19+: looked up by name, so that this compiles with every tested Redisson. */
    @Test
    @Order(9)
    void aFencedLocksTokensIncrease() throws Exception {
        assumeTrue(RedissonTest.atLeast(3, 19), "RFencedLock is 3.19+");
        RLock lock = (RLock) RedissonClient.class.getMethod("getFencedLock", String.class).invoke(app, "app:fenced");
        long first = (Long) lock.getClass().getMethod("lockAndGetToken").invoke(lock);
        lock.unlock();
        long second = (Long) lock.getClass().getMethod("lockAndGetToken").invoke(lock);
        assertTrue(second > first, second + " after " + first);
        lock.unlock();
    }

    /** Nothing the workload did was refused, and Redisson's scripts ran as native commands. */
    @Test
    @Order(10)
    void nothingWasRefusedAndTheScriptsRanNatively() {
        assertEquals(List.of(), admin.cmd("ACL", "LOG"), "ACL LOG");
        for (String family : List.of("lock", "fair", "rwlock", "semaphore", "permit_semaphore", "latch")) {
            assertTrue(RedissonTest.rlockInfo(server, "rlock_redisson_native_" + family) > 0, family + " ran natively");
        }
        if (RedissonTest.atLeast(3, 19)) {
            assertTrue(RedissonTest.rlockInfo(server, "rlock_redisson_native_fenced") > 0, "fenced ran natively");
        }
        assertEquals(0, RedissonTest.rlockInfo(server, "rlock_redisson_acl_lua"), "no call left to Lua for its caller's ACL");
    }

    /** Other names, deleting a lock and other commands are refused. */
    @Test
    @Order(11)
    void theUserCannotTouchOtherNamesNorRunOtherCommands() throws Exception {
        Exception other = assertThrows(Exception.class, () -> app.getLock("other:x").lock(LEASE_S, TimeUnit.SECONDS));
        assertTrue(String.valueOf(rootMessage(other)).contains("NOPERM"), "other:x: " + rootMessage(other));
        Exception otherSemaphore = assertThrows(Exception.class, () -> app.getSemaphore("other:s").trySetPermits(1));
        assertTrue(String.valueOf(rootMessage(otherSemaphore)).contains("NOPERM"), rootMessage(otherSemaphore));
        try (Resp user = server.resp()) {
            assertEquals("OK", user.cmd("AUTH", recipe.user(), recipe.password()));
            app.getLock("app:held").lock(LEASE_S, TimeUnit.SECONDS);
            for (Object[] command : List.of(new Object[] {"KEYS", "*"}, new Object[] {"FLUSHALL"},
                    new Object[] {"DEL", "app:held"}, new Object[] {"HSET", "app:held", "x", "1"},
                    new Object[] {"SET", "app:s", "5"}, new Object[] {"GET", "other:s"},
                    new Object[] {"CONFIG", "SET", "rlock.redisson-scripts", "off"})) {
                Object reply = user.call(command);
                assertTrue(reply instanceof Resp.Error && reply.toString().contains("NOPERM"),
                        List.of(command) + ": " + reply);
            }
            app.getLock("app:held").forceUnlock();
        }
    }

    /**
     * Whether this Redisson has texts the workload runs that the filter leaves to Lua, for which
     * the {@code redisson-lua-texts} recipe is documented: the read lock's watchdog renewal of
     * 3.44.0 .. 3.52.0 and 4.0.0 .. 4.3.1, the expirable permit's release before 3.17.
     */
    private static boolean runsTextsLeftToLua() {
        boolean readRenewal = RedissonTest.atLeast(3, 44) && !RedissonTest.atLeast(3, 53)
                || RedissonTest.atLeast(4, 0) && !RedissonTest.atLeast(4, 4);
        return readRenewal || !RedissonTest.atLeast(3, 17);
    }

    private static String rootMessage(Throwable error) {
        Throwable cause = error;
        while (cause.getCause() != null && cause.getCause() != cause) {
            cause = cause.getCause();
        }
        return cause.getMessage();
    }

    /** {@code work} in another thread (another owner to Redisson). */
    private static <T> CompletableFuture<T> inThread(Callable<T> work) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return work.call();
            } catch (Exception e) {
                throw new CompletionException(e);
            }
        });
    }

    /** Waits until someone subscribed to {@code channel} (a Redisson waiter). */
    private void awaitSubscribers(String channel) {
        RedissonTest.eventually("someone subscribed to " + channel,
                () -> (Long) ((List<?>) admin.cmd("PUBSUB", "NUMSUB", channel)).get(1) > 0);
    }
}
