package rlock.interop;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * A redis-server (or valkey-server) with the rlock module on a free loopback
 * port, as testkit/src/server.rs starts them for the Rust tests: its own
 * directory, bounded readiness, the log on failure, killed at the end (a
 * shutdown hook, also when tests fail or the JVM is interrupted).
 *
 * <p>System properties (the Makefile sets them): {@code rlock.server.bin}
 * (default {@code redis-server}), {@code rlock.module} (the .so),
 * {@code rlock.module.args} (words after the module path on the loadmodule
 * line; the switch for the native-scripts mode of issue 21 part 2).
 */
public final class RlockServer implements AutoCloseable {
    private static final long READY_TIMEOUT_MS = 20_000;
    private static final int PORT_ATTEMPTS = 5;
    /** How a start that found another server on its port fails. */
    private static final String ANOTHER_SERVER = "another server answers on port";
    private static RlockServer shared;
    private static RuntimeException sharedFailure;

    private final Path dir;
    private final Path log;
    private final Supplier<List<String>> extraArgs;
    private Process process;
    private int port;

    /** The one server of this JVM: every test class shares it (names differ). */
    public static synchronized RlockServer shared() {
        if (sharedFailure != null) {
            throw new IllegalStateException("the server did not start (see the first failure)", sharedFailure);
        }
        if (shared == null) {
            try {
                shared = start();
            } catch (RuntimeException e) {
                sharedFailure = e;
                throw e;
            }
            RlockServer server = shared;
            Runtime.getRuntime().addShutdownHook(new Thread(server::close));
        }
        return shared;
    }

    public static String serverBin() {
        return prop("rlock.server.bin", "RLOCK_SERVER_BIN", "redis-server");
    }

    /** The CLI given by {@code rlock.cli.bin} or {@code RLOCK_CLI_BIN}, or null. */
    static String cliBinGiven() {
        return prop("rlock.cli.bin", "RLOCK_CLI_BIN", null);
    }

    public static String modulePath() {
        String module = prop("rlock.module", "RLOCK_MODULE", null);
        if (module == null || module.isEmpty()) {
            throw new IllegalStateException("set -Drlock.module=/path/to/librlock.so (make test-java does)");
        }
        if (!Files.isRegularFile(Path.of(module))) {
            throw new IllegalStateException("no rlock module at " + module + ": build it first (cargo build -p rlock)");
        }
        return Path.of(module).toAbsolutePath().toString();
    }

    /** {@code lua} (Redisson's scripts run as Lua) unless rlock.module.args says otherwise. */
    public static String mode() {
        return prop("rlock.mode", "RLOCK_MODE", "lua");
    }

    private static String prop(String name, String env, String fallback) {
        String value = System.getProperty(name);
        if (value == null || value.isEmpty()) {
            value = System.getenv(env);
        }
        return value == null || value.isEmpty() ? fallback : value;
    }

    private RlockServer(Supplier<List<String>> extraArgs) throws IOException {
        this.extraArgs = extraArgs;
        dir = Files.createTempDirectory("rlock-java-");
        log = dir.resolve("server.log");
    }

    public static RlockServer start() {
        return start(List::of);
    }

    /**
     * A server with more config words after the module's (a cluster node's,
     * see {@link RlockCluster}), asked again for each attempt at a port.
     */
    public static RlockServer start(Supplier<List<String>> extraArgs) {
        try {
            RlockServer server = new RlockServer(extraArgs);
            List<String> tried = new ArrayList<>();
            for (int attempt = 0; attempt < PORT_ATTEMPTS; attempt++) {
                server.port = freePort();
                String failure = server.spawn();
                if (failure == null) {
                    return server;
                }
                if (!failure.contains("Address already in use") && !failure.startsWith(ANOTHER_SERVER)) {
                    throw new IllegalStateException("server did not start:\n" + failure);
                }
                tried.add(failure.lines().filter(line -> line.contains("in use") || line.startsWith(ANOTHER_SERVER))
                        .findFirst().orElse("port " + server.port));
            }
            throw new IllegalStateException("no free port after " + PORT_ATTEMPTS + " attempts: " + tried);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    /**
     * Starts the process; null once it answers PING, else why not (with its log). The answer
     * must be this process's (INFO names it): a port found free may be taken before the server
     * binds it, by another test's server given the same port, which then answers while this
     * one fails to bind (Redisson then connected to a server that went away with its test).
     */
    private String spawn() throws IOException {
        List<String> command = new ArrayList<>(List.of(serverBin(),
                "--port", Integer.toString(port), "--bind", "127.0.0.1",
                "--dir", dir.toString(), "--logfile", log.toString(),
                "--save", "", "--appendonly", "no", "--loadmodule", modulePath()));
        String args = prop("rlock.module.args", "RLOCK_MODULE_ARGS", "");
        for (String arg : args.trim().split("\\s+")) {
            if (!arg.isEmpty()) {
                command.add(arg);
            }
        }
        command.addAll(extraArgs.get());
        Files.deleteIfExists(log);
        process = new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(dir.resolve("stdout.log").toFile()).start();
        long deadline = System.currentTimeMillis() + READY_TIMEOUT_MS;
        while (System.currentTimeMillis() < deadline) {
            if (!process.isAlive()) {
                return "exited with " + process.exitValue() + "\n" + log();
            }
            try (Resp resp = new Resp(port)) {
                if ("PONG".equals(resp.call("PING"))) {
                    String answered = processId(resp);
                    long own = process.pid();
                    if (answered.equals(Long.toString(own))) {
                        return null;
                    }
                    stop();
                    return ANOTHER_SERVER + " " + port + " (process " + answered + ", this one " + own + ")\n"
                            + log();
                }
            } catch (IOException notYet) {
                // not listening yet
            }
            sleep(20);
        }
        process.destroyForcibly();
        return "not ready within " + READY_TIMEOUT_MS + " ms\n" + log();
    }

    /** The process_id INFO server names on {@code resp}'s server. */
    private static String processId(Resp resp) throws IOException {
        String info = String.valueOf(resp.call("INFO", "server"));
        return info.lines().filter(line -> line.startsWith("process_id:"))
                .map(line -> line.substring("process_id:".length()).trim()).findFirst().orElse("?");
    }

    /**
     * What a test that cannot reach this server needs to know: the port, whether the process
     * lives, and what answers on the port (this process, another, or nothing).
     */
    public String describe() {
        StringBuilder text = new StringBuilder("port " + port + ", server process ");
        Process running = process;
        if (running == null) {
            text.append("stopped");
        } else {
            text.append(running.pid()).append(running.isAlive() ? " alive" : " exited with " + running.exitValue());
        }
        text.append("; on the port: ");
        try (Resp resp = new Resp(port)) {
            text.append(resp.call("PING")).append(" from process ").append(processId(resp));
        } catch (IOException | RuntimeException e) {
            text.append(e);
        }
        String[] lines = log().split("\n");
        text.append("; its log's last lines:\n");
        for (int i = Math.max(0, lines.length - 30); i < lines.length; i++) {
            text.append(lines[i]).append('\n');
        }
        return text.toString();
    }

    /** This server's directory (a cluster node's nodes.conf lives there). */
    public Path dir() {
        return dir;
    }

    public int port() {
        return port;
    }

    public String url() {
        return "redis://127.0.0.1:" + port;
    }

    public Resp resp() {
        try {
            return new Resp(port);
        } catch (IOException e) {
            throw new IllegalStateException("connect: " + e + "\n" + log(), e);
        }
    }

    /** The server's log (and anything it wrote before opening it). */
    public String log() {
        StringBuilder text = new StringBuilder();
        for (Path file : List.of(dir.resolve("stdout.log"), log)) {
            try {
                if (Files.exists(file)) {
                    text.append(Files.readString(file));
                }
            } catch (IOException e) {
                text.append("(cannot read ").append(file).append(": ").append(e).append(")\n");
            }
        }
        return text.toString();
    }

    /** Stops the process, if any. */
    private synchronized void stop() {
        if (process != null) {
            process.destroy();
            try {
                if (!process.waitFor(5, TimeUnit.SECONDS)) {
                    process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
            process = null;
        }
    }

    @Override
    public synchronized void close() {
        stop();
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException ignored) {
            // a temp dir left behind
        }
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
