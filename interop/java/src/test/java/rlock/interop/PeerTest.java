package rlock.interop;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** A Redisson test with an rlock-client peer (interop/rust-peer) on the same server. */
abstract class PeerTest extends RedissonTest {
    protected Peer rust;

    @BeforeAll
    void startPeer() {
        rust = new Peer(server, Peer.WATCHDOG_MS);
    }

    @AfterAll
    void stopPeer() {
        if (rust != null) {
            rust.close();
        }
    }
}
