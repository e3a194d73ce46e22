package rlock.faults;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.redisson.config.SentinelServersConfig;

/**
 * The fault suite's Redisson clients (faults/src/java_workload.rs starts
 * this JVM): one Redisson client in Sentinel mode, {@code threads} threads
 * that each take a lock on one of {@code names} names with {@code
 * lockInterruptibly()} (the watchdog renews it every third of {@code
 * lockWatchdogTimeout}), hold it up to {@code longestHoldMs} and unlock.
 *
 * <pre>java rlock.faults.RedissonWorkload MASTER SENTINEL_PORTS THREADS NAMES WATCHDOG_MS LONGEST_HOLD_MS SEED</pre>
 *
 * <p>Stdout: {@code ready} once connected, then, after {@code go} on
 * stdin, a line a critical section: {@code section THREAD NAME START END
 * HOW}, START and END in System.nanoTime() (CLOCK_MONOTONIC on Linux),
 * START after lock() returned, END before unlock() is sent (so a reported
 * section lies within the hold the server granted), HOW {@code released},
 * {@code lost} (unlock() threw IllegalMonitorStateException: the lock was
 * no longer this thread's) or {@code failed} (unlock() threw otherwise).
 * On {@code stop} (or stdin's end: the suite is gone) the threads end
 * their holds, {@code done} follows the last section, and the JVM exits.
 */
public final class RedissonWorkload {
    private static volatile boolean stopped;

    public static void main(String[] args) throws Exception {
        String master = args[0];
        String[] sentinelPorts = args[1].split(",");
        int threads = Integer.parseInt(args[2]);
        int names = Integer.parseInt(args[3]);
        long watchdogMs = Long.parseLong(args[4]);
        int longestHoldMs = Integer.parseInt(args[5]);
        long seed = Long.parseLong(args[6]);

        Config config = new Config();
        config.setLockWatchdogTimeout(watchdogMs);
        SentinelServersConfig sentinels = config.useSentinelServers().setMasterName(master);
        for (String port : sentinelPorts) {
            sentinels.addSentinelAddress("redis://127.0.0.1:" + port);
        }
        RedissonClient redisson = Redisson.create(config);
        // Classes and connections warmed before the run's clock starts.
        RLock warm = redisson.getLock("warmup");
        warm.lock();
        warm.unlock();

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        say("ready");
        if (!"go".equals(in.readLine())) {
            System.exit(1);
        }
        Thread[] workers = new Thread[threads];
        for (int id = 0; id < threads; id++) {
            Random rng = new Random(seed * 1_000_003L + id);
            int thread = id;
            workers[id] = new Thread(() -> work(redisson, thread, rng, names, longestHoldMs), "client-" + id);
            workers[id].start();
        }
        in.readLine(); // "stop", or null when the suite is gone
        stopped = true;
        for (Thread worker : workers) {
            worker.interrupt();
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        for (Thread worker : workers) {
            worker.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
        }
        say("done");
        System.exit(0);
    }

    /** One client's loop: lock, hold, unlock, report, until stopped. */
    private static void work(RedissonClient redisson, int thread, Random rng, int names, int longestHoldMs) {
        while (!stopped) {
            int name = rng.nextInt(names);
            RLock lock = redisson.getLock("lock-" + name);
            try {
                lock.lockInterruptibly();
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                // No primary to answer (a failover): try again shortly.
                if (!pause(20)) {
                    return;
                }
                continue;
            }
            long start = System.nanoTime();
            boolean interrupted = !pause(200 + rng.nextInt(longestHoldMs - 200));
            long end = System.nanoTime();
            String how;
            try {
                lock.unlock();
                how = "released";
            } catch (IllegalMonitorStateException e) {
                how = "lost";
            } catch (RuntimeException e) {
                how = "failed";
            }
            say("section " + thread + " " + name + " " + start + " " + end + " " + how);
            if (interrupted) {
                return;
            }
        }
    }

    /** Sleeps {@code ms}; false when interrupted (the run stops). */
    private static boolean pause(long ms) {
        try {
            Thread.sleep(ms);
            return true;
        } catch (InterruptedException e) {
            return false;
        }
    }

    private static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }
}
