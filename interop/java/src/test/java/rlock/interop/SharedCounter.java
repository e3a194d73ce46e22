package rlock.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.redisson.api.RBucket;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;

/**
 * Mutual exclusion under load: Java threads (Redisson) and rlock-client
 * tasks (the peer) increment an unprotected counter under one lock; no
 * update may be lost.
 */
final class SharedCounter {
    private SharedCounter() {}

    static void incrementAndCheck(RedissonClient redisson, Peer rust, String name, String key,
            int javaThreads, int rustTasks, int rounds, long timeoutSeconds) throws Exception {
        RBucket<String> counter = redisson.getBucket(key, StringCodec.INSTANCE);
        counter.set("0");
        CompletableFuture<String> rustSide = rust.callAsync("counter " + name + " " + key + " " + rustTasks + " " + rounds);
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < javaThreads; t++) {
            Thread thread = new Thread(() -> {
                RLock lock = redisson.getLock(name);
                for (int i = 0; i < rounds; i++) {
                    lock.lock();
                    try {
                        counter.set(Long.toString(Long.parseLong(counter.get()) + 1));
                    } finally {
                        lock.unlock();
                    }
                }
            });
            thread.start();
            threads.add(thread);
        }
        for (Thread thread : threads) {
            thread.join(timeoutSeconds * 1000);
            assertFalse(thread.isAlive());
        }
        rustSide.get(timeoutSeconds, TimeUnit.SECONDS);
        assertEquals(Integer.toString((javaThreads + rustTasks) * rounds), counter.get(), "no update lost");
    }
}
