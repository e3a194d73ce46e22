package rlock.interop;

import java.util.ArrayList;
import java.util.List;

/**
 * The commands a server ran while a test ran (MONITOR), for a failure
 * message that shows in which order they ran. Script bodies are shortened
 * to their first words; a command repeated (a poll) is kept once, with its count.
 */
final class CommandTrace implements AutoCloseable {
    private final Resp monitor;
    private final List<String> lines = new ArrayList<>();
    private String last = "";
    private int repeats;

    CommandTrace(RlockServer server) throws Exception {
        monitor = server.resp();
        monitor.timeout(0);
        monitor.call("MONITOR");
        Thread reader = new Thread(() -> {
            try {
                while (true) {
                    String line = String.valueOf(monitor.read()).replaceAll("\"([^\"]{0,30})[^\"]{200,}\"", "\"$1...\"");
                    add(line);
                }
            } catch (Exception closed) {
                // the connection closed: done
            }
        }, "command-trace");
        reader.setDaemon(true);
        reader.start();
    }

    private void add(String line) {
        String command = line.substring(line.indexOf(']') + 1);
        synchronized (lines) {
            if (command.equals(last)) {
                repeats++;
                return;
            }
            if (repeats > 0) {
                lines.add("  (" + repeats + " more of the above)");
            }
            lines.add(line);
            last = command;
            repeats = 0;
        }
    }

    /** The commands so far, one per line. */
    String lines() {
        synchronized (lines) {
            return "\n" + String.join("\n", lines) + (repeats > 0 ? "\n  (" + repeats + " more of the above)" : "");
        }
    }

    @Override
    public void close() {
        monitor.close();
    }
}
