package rlock.interop;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A minimal RESP2 connection for what Redisson's API cannot send: readiness
 * pings, raw RPSEM/RLOCK commands, inspecting keys, SUBSCRIBE. Replies come
 * back as String (simple/bulk, null for nil), Long, List, or an
 * {@link Error} for error replies.
 */
public final class Resp implements AutoCloseable {
    public static final class Error extends RuntimeException {
        Error(String message) {
            super(message);
        }
    }

    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;

    public Resp(int port) throws IOException {
        socket = new Socket();
        socket.connect(new InetSocketAddress("127.0.0.1", port), 1000);
        socket.setSoTimeout(10_000);
        in = new BufferedInputStream(socket.getInputStream());
        out = socket.getOutputStream();
    }

    /** Sends a command; its arguments are String (UTF-8), byte[] or numbers. */
    public Object call(Object... args) throws IOException {
        send(args);
        return read();
    }

    /** {@link #call} for tests: no checked exception, error replies thrown. */
    public Object cmd(Object... args) {
        try {
            Object reply = call(args);
            if (reply instanceof Error) {
                throw (Error) reply;
            }
            return reply;
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    public void send(Object... args) throws IOException {
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        buf.write(("*" + args.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
        for (Object arg : args) {
            byte[] bytes = arg instanceof byte[] ? (byte[]) arg : String.valueOf(arg).getBytes(StandardCharsets.UTF_8);
            buf.write(("$" + bytes.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
            buf.write(bytes);
            buf.write("\r\n".getBytes(StandardCharsets.US_ASCII));
        }
        out.write(buf.toByteArray());
        out.flush();
    }

    public void timeout(int ms) throws IOException {
        socket.setSoTimeout(ms);
    }

    public Object read() throws IOException {
        int type = in.read();
        String line = line();
        switch (type) {
            case '+':
                return line;
            case '-':
                return new Error(line);
            case ':':
                return Long.parseLong(line);
            case '$': {
                int len = Integer.parseInt(line);
                if (len < 0) {
                    return null;
                }
                byte[] data = in.readNBytes(len + 2);
                return new String(data, 0, len, StandardCharsets.ISO_8859_1);
            }
            case '*': {
                int len = Integer.parseInt(line);
                if (len < 0) {
                    return null;
                }
                List<Object> items = new ArrayList<>(len);
                for (int i = 0; i < len; i++) {
                    items.add(read());
                }
                return items;
            }
            case -1:
                throw new IOException("connection closed");
            default:
                throw new IOException("bad reply type " + (char) type);
        }
    }

    private String line() throws IOException {
        StringBuilder line = new StringBuilder();
        int c;
        while ((c = in.read()) != '\r') {
            if (c == -1) {
                throw new IOException("connection closed");
            }
            line.append((char) c);
        }
        in.read();
        return line.toString();
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException ignored) {
            // closing
        }
    }
}
