package rlock.interop;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/**
 * Section 9 of {@code make bench}, not a test: skipped unless
 * {@code rlock.bench.address} names a server (the bench's, with the module).
 * Redisson's {@code lock()}/{@code unlock()} cycles on {@code rlock.bench.threads}
 * threads (64), each on a name of its own (uncontended: the scripts' cost, not
 * pub/sub waiting), for {@code rlock.bench.ms} per phase after a warm-up as long. Each
 * phase of {@code rlock.bench.modes} (comma-separated {@code native}/{@code off})
 * first sets {@code rlock.redisson-scripts}; each prints one line for the bench:
 * {@code rlock-bench redisson-cycles mode=<mode> per_sec=<cycles per second>}.
 */
@EnabledIfSystemProperty(named = "rlock.bench.address", matches = ".+")
class LockThroughputBench {
    @Test
    void lockUnlockCycles() throws Exception {
        String address = System.getProperty("rlock.bench.address");
        int threads = Integer.getInteger("rlock.bench.threads", 64);
        long phaseMs = Long.getLong("rlock.bench.ms", 3000);
        String[] modes = System.getProperty("rlock.bench.modes", "off,native,native,off").split(",");
        Config config = new Config();
        config.useSingleServer()
                .setAddress(address)
                .setConnectionMinimumIdleSize(threads)
                .setConnectionPoolSize(threads);
        RedissonClient redisson = Redisson.create(config);
        try (Resp admin = new Resp(URI.create(address).getPort())) {
            cyclesPerSec(redisson, threads, phaseMs);
            for (String mode : modes) {
                admin.cmd("CONFIG", "SET", "rlock.redisson-scripts", mode);
                double perSec = cyclesPerSec(redisson, threads, phaseMs);
                System.out.printf("rlock-bench redisson-cycles mode=%s per_sec=%.0f%n", mode, perSec);
            }
        } finally {
            redisson.shutdown();
        }
    }

    private static double cyclesPerSec(RedissonClient redisson, int threads, long ms) throws InterruptedException {
        LongAdder cycles = new LongAdder();
        AtomicBoolean stop = new AtomicBoolean();
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            RLock lock = redisson.getLock("bench:java:" + t);
            workers.add(new Thread(() -> {
                while (!stop.get()) {
                    lock.lock();
                    lock.unlock();
                    cycles.increment();
                }
            }));
        }
        long started = System.nanoTime();
        workers.forEach(Thread::start);
        Thread.sleep(ms);
        stop.set(true);
        for (Thread worker : workers) {
            worker.join();
        }
        return cycles.sum() / ((System.nanoTime() - started) / 1e9);
    }
}
