//! A raw RESP3 connection with client-side caching (CLIENT TRACKING) on,
//! to see which commands send invalidations.

use crate::Server;
use std::io::{Read, Write};
use std::net::TcpStream;

pub struct Tracker {
    stream: TcpStream,
    syncs: usize,
}

impl Tracker {
    /// Connects, switches to RESP3 and turns tracking on.
    pub fn connect(server: &Server) -> Self {
        let stream = TcpStream::connect(("127.0.0.1", server.port())).expect("connect");
        let mut tracker = Self { stream, syncs: 0 };
        tracker.send(&[b"HELLO".as_slice(), b"3"]);
        tracker.send(&[b"CLIENT".as_slice(), b"TRACKING", b"ON"]);
        tracker.sync();
        tracker
    }

    /// Sends a command without reading its reply.
    pub fn send<A: AsRef<[u8]>>(&mut self, args: &[A]) {
        let mut command = format!("*{}\r\n", args.len()).into_bytes();
        for arg in args {
            let arg = arg.as_ref();
            command.extend(format!("${}\r\n", arg.len()).bytes());
            command.extend_from_slice(arg);
            command.extend(b"\r\n");
        }
        self.stream.write_all(&command).expect("write");
    }

    /// Reads everything the server sent up to the reply of a fresh ECHO:
    /// replies and pushes (invalidations) that came before it.
    pub fn sync(&mut self) -> Vec<u8> {
        self.syncs += 1;
        let marker = format!("sync-{}", self.syncs);
        self.send(&[b"ECHO".as_slice(), marker.as_bytes()]);
        let end = format!("${}\r\n{marker}\r\n", marker.len()).into_bytes();
        let mut received = Vec::new();
        let mut buffer = [0; 4096];
        while !received.ends_with(&end) {
            let read = self.stream.read(&mut buffer).expect("read");
            assert!(read > 0, "the server closed the connection");
            received.extend_from_slice(&buffer[..read]);
        }
        received
    }
}

/// Whether what [`Tracker::sync`] read holds an invalidation.
pub fn invalidated(received: &[u8]) -> bool {
    received.windows(b"invalidate".len()).any(|window| window == b"invalidate")
}
