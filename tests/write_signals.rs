//! Every real write of the RLOCK commands aborts another
//! client's WATCH, and sends a RESP3 tracking invalidation, whether the
//! command runs alone, inside MULTI/EXEC or from EVAL.

use redis::{Connection, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use testkit::{unlock_latch_key, Server};

const LOCK: &[u8] = b"lock";

type Args = Vec<Vec<u8>>;

fn args(parts: &[&[u8]]) -> Args {
    parts.iter().map(|part| part.to_vec()).collect()
}

/// (what, setup, write, watched key)
fn writes() -> Vec<(&'static str, Vec<Args>, Args, Vec<u8>)> {
    let acquire = args(&[b"RLOCK.ACQUIRE", LOCK, b"a", b"60000"]);
    vec![
        ("fresh acquire", vec![], acquire.clone(), LOCK.to_vec()),
        ("re-entry", vec![acquire.clone()], acquire.clone(), LOCK.to_vec()),
        ("renew", vec![acquire.clone()], args(&[b"RLOCK.RENEW", LOCK, b"a", b"50000"]), LOCK.to_vec()),
        (
            "release of one level",
            vec![acquire.clone(), acquire.clone()],
            args(&[b"RLOCK.RELEASE", LOCK, b"a", b"50000"]),
            LOCK.to_vec(),
        ),
        ("full release", vec![acquire.clone()], args(&[b"RLOCK.RELEASE", LOCK, b"a"]), LOCK.to_vec()),
        ("force release", vec![acquire.clone()], args(&[b"RLOCK.FORCERELEASE", LOCK]), LOCK.to_vec()),
        (
            "latch write",
            vec![acquire.clone(), acquire.clone()],
            args(&[b"RLOCK.RELEASE", LOCK, b"a", b"50000", b"ID", b"r1"]),
            unlock_latch_key(LOCK, b"r1"),
        ),
        (
            "acquire over an expired lock",
            vec![args(&[b"RLOCK.ACQUIRE", LOCK, b"b", b"1"]), args(&[b"DEBUG", b"SLEEP", b"0.01"])],
            acquire.clone(),
            LOCK.to_vec(),
        ),
    ]
}

/// The write as sent: alone, in MULTI/EXEC, or from a script.
fn wrapped(how: &str, write: &Args) -> Vec<Args> {
    match how {
        "alone" => vec![write.clone()],
        "multi" => vec![args(&[b"MULTI"]), write.clone(), args(&[b"EXEC"])],
        "eval" => {
            let mut eval = args(&[b"EVAL", b"return redis.call(unpack(ARGV))", b"0"]);
            eval.extend(write.iter().cloned());
            vec![eval]
        }
        _ => unreachable!(),
    }
}

fn run(con: &mut Connection, args: &Args) -> Value {
    let mut cmd = redis::cmd(std::str::from_utf8(&args[0]).unwrap());
    cmd.arg(&args[1..]);
    cmd.query(con).unwrap_or_else(|err| panic!("{}: {err}", String::from_utf8_lossy(&args.concat())))
}

fn server() -> Server {
    Server::builder().config("enable-debug-command", "yes").start()
}

#[test]
fn every_write_aborts_watch() {
    let server = server();
    let (mut watcher, mut other) = (server.connection(), server.connection());
    let mut failures = vec![];
    for how in ["alone", "multi", "eval"] {
        for (what, setup, write, key) in writes() {
            let _: () = redis::cmd("FLUSHALL").query(&mut other).unwrap();
            setup.iter().for_each(|cmd| drop(run(&mut other, cmd)));
            let _: () = redis::cmd("WATCH").arg(&key).query(&mut watcher).unwrap();
            wrapped(how, &write).iter().for_each(|cmd| drop(run(&mut other, cmd)));
            let _: () = redis::cmd("MULTI").query(&mut watcher).unwrap();
            let _: Value = redis::cmd("PING").query(&mut watcher).unwrap();
            let exec: Value = redis::cmd("EXEC").query(&mut watcher).unwrap();
            if exec != Value::Nil {
                failures.push(format!("{what} ({how}) did not abort WATCH"));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

struct Tracker {
    stream: TcpStream,
    syncs: usize,
}

impl Tracker {
    fn connect(server: &Server) -> Self {
        let stream = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
        let mut tracker = Self { stream, syncs: 0 };
        tracker.send(&args(&[b"HELLO", b"3"]));
        tracker.send(&args(&[b"CLIENT", b"TRACKING", b"ON"]));
        tracker.sync();
        tracker
    }

    fn send(&mut self, args: &Args) {
        let mut command = format!("*{}\r\n", args.len()).into_bytes();
        for arg in args {
            command.extend(format!("${}\r\n", arg.len()).bytes());
            command.extend_from_slice(arg);
            command.extend(b"\r\n");
        }
        self.stream.write_all(&command).unwrap();
    }

    fn sync(&mut self) -> Vec<u8> {
        self.syncs += 1;
        let marker = format!("sync-{}", self.syncs);
        self.send(&args(&[b"ECHO", marker.as_bytes()]));
        let end = format!("${}\r\n{marker}\r\n", marker.len()).into_bytes();
        let mut received = Vec::new();
        let mut buffer = [0; 4096];
        while !received.ends_with(&end) {
            let read = self.stream.read(&mut buffer).unwrap();
            assert!(read > 0, "the server closed the connection");
            received.extend_from_slice(&buffer[..read]);
        }
        received
    }
}

#[test]
fn every_write_invalidates_tracking() {
    let server = server();
    let mut other = server.connection();
    let mut tracker = Tracker::connect(&server);
    let mut failures = vec![];
    for how in ["alone", "multi", "eval"] {
        for (what, setup, write, key) in writes() {
            let _: () = redis::cmd("FLUSHALL").arg("SYNC").query(&mut other).unwrap();
            setup.iter().for_each(|cmd| drop(run(&mut other, cmd)));
            tracker.send(&args(&[b"EXISTS", &key]));
            tracker.sync();
            wrapped(how, &write).iter().for_each(|cmd| drop(run(&mut other, cmd)));
            let received = tracker.sync();
            if !received.windows(b"invalidate".len()).any(|window| window == b"invalidate") {
                failures.push(format!("{what} ({how}) sent no invalidation"));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
