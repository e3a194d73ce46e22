//! A minimal pipelining client over a plain TCP socket: the batch is
//! encoded once and sent again and again, and replies are counted, not
//! parsed, so that the server, not the client, is what is measured.

use std::io::{Read, Write};
use std::net::TcpStream;

/// RESP encoding of one command.
pub fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

pub struct RawConnection {
    stream: TcpStream,
    buffer: Vec<u8>,
}

impl RawConnection {
    pub fn connect(port: u16) -> Self {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        Self { stream, buffer: vec![0; 1 << 16] }
    }

    /// Sends `batch` (holding `replies` commands whose replies are each a
    /// single line: nil, integer, status or error) and waits for all the
    /// replies. Panics on an error reply: a benchmark must not measure
    /// failures.
    pub fn round_trip(&mut self, batch: &[u8], replies: usize) {
        self.stream.write_all(batch).expect("write");
        let mut seen = 0;
        let mut at_line_start = true;
        while seen < replies {
            let n = self.stream.read(&mut self.buffer).expect("read");
            assert!(n > 0, "server closed the connection");
            for &byte in &self.buffer[..n] {
                if at_line_start && byte == b'-' {
                    panic!("error reply: {}", String::from_utf8_lossy(&self.buffer[..n]));
                }
                at_line_start = byte == b'\n';
                seen += usize::from(byte == b'\n');
            }
        }
    }
}
