package rlock.interop;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A Redis Cluster of primaries on loopback, every node an {@link RlockServer}
 * with the module, joined by {@code redis-cli --cluster create}, as
 * testkit/src/cluster.rs does for the Rust tests. Bounded: the join and the
 * wait for a healthy cluster time out. {@link #close} stops every node; a
 * failed start stops the nodes it started.
 */
public final class RlockCluster implements AutoCloseable {
    private static final long HEALTHY_TIMEOUT_MS = 30_000;

    private final List<RlockServer> nodes = new ArrayList<>();

    private RlockCluster() {
    }

    /**
     * {@code rlock.cli.bin} (or {@code RLOCK_CLI_BIN}), else the CLI next to the server binary:
     * redis-server -> redis-cli, .../valkey-server -> .../valkey-cli (Valkey 9.1's wheel has none).
     */
    static String cliBin() {
        String given = RlockServer.cliBinGiven();
        if (given != null) {
            return given;
        }
        String server = RlockServer.serverBin();
        int at = server.lastIndexOf("-server");
        if (at < 0) {
            throw new IllegalStateException("cannot tell the CLI of " + server);
        }
        return server.substring(0, at) + "-cli" + server.substring(at + "-server".length());
    }

    private static int freeBusPort() {
        try {
            return RlockServer.freePort();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    public static RlockCluster start(int primaries) {
        RlockCluster cluster = new RlockCluster();
        try {
            for (int i = 0; i < primaries; i++) {
                // The bus port chosen explicitly (the default, port + 10000, may be taken).
                cluster.nodes.add(RlockServer.start(() -> List.of("--cluster-enabled", "yes",
                        "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "2000",
                        "--cluster-port", Integer.toString(freeBusPort()))));
            }
            List<String> command = new ArrayList<>(List.of(cliBin(), "--cluster", "create"));
            for (RlockServer node : cluster.nodes) {
                command.add("127.0.0.1:" + node.port());
            }
            command.addAll(List.of("--cluster-replicas", "0", "--cluster-yes"));
            Process create = new ProcessBuilder(command).redirectErrorStream(true).start();
            if (!create.waitFor(HEALTHY_TIMEOUT_MS, TimeUnit.MILLISECONDS)) {
                create.destroyForcibly();
                throw new IllegalStateException("redis-cli --cluster create did not finish");
            }
            String output = new String(create.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (create.exitValue() != 0) {
                throw new IllegalStateException("redis-cli --cluster create failed:\n" + output);
            }
            cluster.awaitHealthy();
            Runtime.getRuntime().addShutdownHook(new Thread(cluster::close));
            return cluster;
        } catch (IOException | RuntimeException | InterruptedException e) {
            cluster.close();
            throw new IllegalStateException("cluster did not start: " + e, e);
        }
    }

    /** Every node says cluster_state:ok and knows every other node. */
    private void awaitHealthy() throws IOException, InterruptedException {
        long deadline = System.currentTimeMillis() + HEALTHY_TIMEOUT_MS;
        for (RlockServer node : nodes) {
            try (Resp resp = node.resp()) {
                while (true) {
                    String info = (String) resp.cmd("CLUSTER", "INFO");
                    if (info.contains("cluster_state:ok") && info.contains("cluster_known_nodes:" + nodes.size() + "\r\n")) {
                        break;
                    }
                    if (System.currentTimeMillis() > deadline) {
                        throw new IllegalStateException("cluster not healthy within " + HEALTHY_TIMEOUT_MS
                                + " ms; node " + node.port() + ":\n" + info);
                    }
                    Thread.sleep(50);
                }
            }
        }
    }

    public List<RlockServer> nodes() {
        return nodes;
    }

    /** redis://127.0.0.1:port for every node. */
    public List<String> urls() {
        return nodes.stream().map(RlockServer::url).toList();
    }

    /** Every node's log, for a failure report. */
    public String logs() {
        StringBuilder text = new StringBuilder();
        for (RlockServer node : nodes) {
            text.append("---- node ").append(node.port()).append("\n");
            text.append(node.log());
        }
        return text.toString();
    }

    @Override
    public synchronized void close() {
        for (RlockServer node : nodes) {
            node.close();
        }
        nodes.clear();
    }
}
