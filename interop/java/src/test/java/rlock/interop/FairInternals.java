package rlock.interop;

import java.lang.reflect.Method;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.redisson.api.RLock;
import org.redisson.client.protocol.RedisCommands;

/**
 * The package-private and protected steps of Redisson's fair lock (its
 * waiting acquire, give-up and unlock scripts, each one call), reached by
 * reflection so that one source serves every Redisson version the suite
 * runs: each sends the script texts of its own release.
 */
final class FairInternals {
    private final RLock lock;

    FairInternals(RLock lock) {
        this.lock = lock;
    }

    /** The waiting acquire by thread {@code threadId}: null when taken, else the hint in ms. */
    Long tryLock(long waitMs, long leaseMs, long threadId) {
        return (Long) call(method("tryLockInnerAsync", 5), waitMs, leaseMs, TimeUnit.MILLISECONDS, threadId,
                RedisCommands.EVAL_LONG);
    }

    /** Redisson's give-up (acquireFailed) of thread {@code threadId}. */
    void giveUp(long waitMs, long threadId) {
        call(method("acquireFailedAsync", 3), waitMs, TimeUnit.MILLISECONDS, threadId);
    }

    /** The unlock by thread {@code threadId}: true when released. */
    boolean unlock(long threadId) {
        Method withRequest = find("unlockInnerAsync", 2);
        Object released = withRequest != null
                ? call(withRequest, threadId, null)
                : call(method("unlockInnerAsync", 1), threadId);
        return (Boolean) released;
    }

    private Method method(String name, int parameters) {
        Method method = find(name, parameters);
        if (method == null) {
            throw new AssertionError("Redisson " + RedissonTest.version() + " has no " + name);
        }
        return method;
    }

    private Method find(String name, int parameters) {
        for (Class<?> type = lock.getClass(); type != null; type = type.getSuperclass()) {
            for (Method method : type.getDeclaredMethods()) {
                if (method.getName().equals(name) && method.getParameterCount() == parameters
                        && !method.isBridge()) {
                    method.setAccessible(true);
                    return method;
                }
            }
        }
        return null;
    }

    private Object call(Method method, Object... args) {
        try {
            Object future = method.invoke(lock, args);
            if (future instanceof CompletionStage<?> stage) {
                return stage.toCompletableFuture().join();
            }
            return ((Future<?>) future).get();
        } catch (Exception e) {
            throw new IllegalStateException(method.getName() + " failed", e);
        }
    }
}
