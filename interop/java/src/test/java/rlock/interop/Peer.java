package rlock.interop;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The Rust side: interop/rust-peer (rlock-client) as a child process, one
 * command a line (see its main.rs), one reply a line. Its stderr goes to
 * the test's stderr. Killed on close.
 */
public final class Peer implements AutoCloseable {
    /**
     * The peer's watchdog timeout in the tests: a renewal every 2 s, 4 s to spare. With 3 s (a
     * renewal every second, 2 s to spare) the suite once starved the peer past a lease it kept
     * (PTTL -2): the side-by-side suite can stall a process for 2-3 s.
     */
    public static final long WATCHDOG_MS = 6000;

    private final Process process;
    private final Writer stdin;
    private final BufferedReader stdout;

    public Peer(RlockServer server, long watchdogMs) {
        this(server.url() + "/", watchdogMs);
    }

    /** On {@code urls}: one server's URL, or a cluster's node URLs joined by commas. */
    public Peer(String urls, long watchdogMs) {
        String bin = System.getProperty("rlock.peer");
        if (bin == null || !Files.isExecutable(Path.of(bin))) {
            throw new IllegalStateException("no rlock-peer at " + bin + ": cargo build -p rlock-peer (make test-java does)");
        }
        try {
            process = new ProcessBuilder(bin, urls, Long.toString(watchdogMs))
                    .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        stdin = new OutputStreamWriter(process.getOutputStream(), StandardCharsets.UTF_8);
        stdout = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        String ready = readLine(20_000);
        if (!"ready".equals(ready)) {
            close();
            throw new IllegalStateException("rlock-peer did not start: " + ready);
        }
    }

    private String readLine(long timeoutMs) {
        CompletableFuture<String> line = CompletableFuture.supplyAsync(() -> {
            try {
                return stdout.readLine();
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        });
        try {
            return line.get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("rlock-peer: no reply within " + timeoutMs + " ms", e);
        }
    }

    /** Sends one command; its reply without the {@code ok } (an {@code err} throws). */
    public synchronized String call(String command) {
        return call(command, 60_000);
    }

    public synchronized String call(String command, long timeoutMs) {
        try {
            stdin.write(command + "\n");
            stdin.flush();
        } catch (IOException e) {
            throw new IllegalStateException("rlock-peer is gone", e);
        }
        String reply = readLine(timeoutMs);
        if (reply == null) {
            throw new IllegalStateException("rlock-peer exited during: " + command);
        }
        if (reply.equals("ok")) {
            return "";
        }
        if (!reply.startsWith("ok ")) {
            throw new IllegalStateException("rlock-peer: " + command + " -> " + reply);
        }
        return reply.substring(3);
    }

    /** {@link #call} on another thread: for commands that wait (lock, acquire). */
    public CompletableFuture<String> callAsync(String command) {
        return CompletableFuture.supplyAsync(() -> call(command));
    }

    @Override
    public void close() {
        try {
            stdin.write("quit\n");
            stdin.flush();
        } catch (IOException ignored) {
            // already gone
        }
        try {
            if (!process.waitFor(3, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(3, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
