//! Section 10: what introspection costs. The deadlock check of a caller
//! about to block, as the callers already blocked on the server grow to
//! 10,000; and `RLOCK.LIST` over a million keys of which 10,000 are
//! locks, against the `SCAN` it is built on.

use crate::raw::encode;
use crate::report::Table;
use crate::server_info::command_stat;
use redis::{Connection, Value};
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};
use testkit::Server;

const WAITERS: [usize; 4] = [0, 100, 1_000, 10_000];
const PROBES: u32 = 100;
const ROUNDS: u32 = 3;
const LEASE: &str = "3600000";

/// How the blocked callers are laid out for the probe's check.
#[derive(Clone, Copy)]
enum Shape {
    /// Each waits for a lock of its own whose holder waits for nothing:
    /// the probe's check reaches one lock.
    Apart,
    /// `o{i}` holds `l{i}` and waits for `l{i+1}`: the probe waits for
    /// `l0`, and its check walks the whole chain.
    Chain,
}

fn run(con: &mut Connection, args: &[&str]) -> Value {
    redis::cmd(args[0]).arg(&args[1..]).query(con).expect("command")
}

fn pipeline(con: &mut Connection, calls: impl Iterator<Item = Vec<String>>) {
    let calls: Vec<Vec<String>> = calls.collect();
    for batch in calls.chunks(1_000) {
        let mut pipe = redis::pipe();
        batch.iter().for_each(|call| {
            pipe.cmd(&call[0]).arg(&call[1..]).ignore();
        });
        pipe.query::<()>(con).expect("pipeline");
    }
}

/// `waiters` callers blocked in `shape`, each on a connection of its own
/// (returned: dropping them ends the waits); the lock the probe waits for.
fn block_waiters(server: &Server, shape: Shape, waiters: usize) -> (Vec<TcpStream>, String) {
    let mut con = server.connection();
    type Pairs = Vec<(String, String)>;
    let (held, waits): (Pairs, Pairs) = match shape {
        Shape::Apart => {
            (0..waiters).map(|i| ((format!("w{i}"), format!("h{i}")), (format!("w{i}"), format!("o{i}")))).unzip()
        }
        Shape::Chain => {
            (0..waiters).map(|i| ((format!("l{i}"), format!("o{i}")), (format!("l{}", i + 1), format!("o{i}")))).unzip()
        }
    };
    let end = match shape {
        Shape::Apart => ("w0".to_owned(), "h0".to_owned()),
        Shape::Chain => (format!("l{waiters}"), "end".to_owned()),
    };
    let acquire =
        |(lock, owner): &(String, String)| vec!["RLOCK.ACQUIRE".into(), lock.clone(), owner.clone(), LEASE.into()];
    pipeline(&mut con, held.iter().chain([&end]).map(acquire));
    let blocked: Vec<TcpStream> = waits
        .iter()
        .map(|(lock, owner)| {
            let mut stream = TcpStream::connect(("127.0.0.1", server.port())).expect("connect");
            let call = encode(&[
                b"RLOCK.ACQUIRE",
                lock.as_bytes(),
                owner.as_bytes(),
                LEASE.as_bytes(),
                b"WAIT",
                LEASE.as_bytes(),
            ]);
            stream.write_all(&call).expect("write");
            stream
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    while crate::server_info::field(server, "clients", "blocked_clients") < waiters as f64 {
        assert!(Instant::now() < deadline, "{waiters} callers never blocked");
        std::thread::sleep(Duration::from_millis(20));
    }
    let probed = match shape {
        Shape::Apart => "w0".to_owned(),
        Shape::Chain => "l0".to_owned(),
    };
    (blocked, probed)
}

/// Server µs per probe (an acquire refused that blocks 1 ms and times
/// out), with detection on and off, interleaved over rounds.
fn probe(server: &Server, lock: &str) -> (f64, f64) {
    let mut con = server.connection();
    let mut usec = [0.0, 0.0];
    for _ in 0..ROUNDS {
        for (mode, detection) in ["yes", "no"].iter().enumerate() {
            run(&mut con, &["CONFIG", "SET", "rlock.deadlock-detection", detection]);
            let before = command_stat(server, "rlock.acquire", "usec");
            for _ in 0..PROBES {
                let reply = run(&mut con, &["RLOCK.ACQUIRE", lock, "probe", LEASE, "WAIT", "1"]);
                assert!(matches!(reply, Value::Int(_)), "the probe waits out its 1 ms: {reply:?}");
            }
            usec[mode] += command_stat(server, "rlock.acquire", "usec") - before;
        }
    }
    let per_probe = f64::from(PROBES * ROUNDS);
    (usec[0] / per_probe, usec[1] / per_probe)
}

pub fn deadlock_cost() -> Table {
    let mut table = Table::new(&[
        "callers blocked",
        "probe's check reaches",
        "server µs per blocking acquire, detection on",
        "detection off",
        "the check",
    ]);
    for shape in [Shape::Apart, Shape::Chain] {
        for waiters in WAITERS {
            if waiters == 0 && matches!(shape, Shape::Chain) {
                continue;
            }
            let server = Server::builder().config("maxclients", "20000").start();
            let (blocked, lock) = block_waiters(&server, shape, waiters);
            let (on, off) = probe(&server, &lock);
            let reaches = match shape {
                Shape::Apart => "1 lock".to_owned(),
                Shape::Chain => format!("{waiters} locks (a chain)"),
            };
            table.row(vec![
                waiters.to_string(),
                reaches,
                format!("{on:.1}"),
                format!("{off:.1}"),
                format!("{:.1}", on - off),
            ]);
            drop(blocked);
        }
    }
    table
}

const KEYS: usize = 1_000_000;
const LOCKS: usize = 10_000;

/// Walks the whole keyspace with `call` (`SCAN` or `RLOCK.LIST` and its
/// options after the cursor): calls made, entries seen, wall time.
fn walk(con: &mut Connection, call: &[&str]) -> (u64, usize, Duration) {
    let (mut cursor, mut calls, mut seen) = ("0".to_owned(), 0, 0);
    let started = Instant::now();
    loop {
        let (next, entries): (String, Vec<Value>) =
            redis::cmd(call[0]).arg(&cursor).arg(&call[1..]).query(con).expect("walk");
        calls += 1;
        seen += entries.len();
        if next == "0" {
            return (calls, seen, started.elapsed());
        }
        cursor = next;
    }
}

pub fn list_cost() -> Table {
    let server = Server::builder().config("enable-debug-command", "yes").start();
    let mut con = server.connection();
    run(&mut con, &["DEBUG", "POPULATE", &(KEYS - LOCKS).to_string(), "key", "8"]);
    pipeline(&mut con, (0..LOCKS).map(|i| vec!["RLOCK.ACQUIRE".into(), format!("lock:{i}"), "o".into(), LEASE.into()]));
    let mut table = Table::new(&["call", "calls for the walk", "entries seen", "server µs per call", "walk, ms"]);
    let walks: [&[&str]; 5] = [
        &["SCAN", "COUNT", "10"],
        &["RLOCK.LIST", "COUNT", "10"],
        &["RLOCK.LIST", "COUNT", "10", "TYPE", "lock"],
        &["SCAN", "COUNT", "1000"],
        &["RLOCK.LIST", "COUNT", "1000"],
    ];
    for call in walks {
        let stat = call[0].to_lowercase();
        let before = command_stat(&server, &stat, "usec");
        let (calls, seen, elapsed) = walk(&mut con, call);
        let usec = command_stat(&server, &stat, "usec") - before;
        if call[0] == "RLOCK.LIST" {
            assert!(seen >= LOCKS, "{call:?} lists every lock: {seen}");
        }
        table.row(vec![
            format!("`{} cursor {}`", call[0], call[1..].join(" ")),
            calls.to_string(),
            seen.to_string(),
            format!("{:.1}", usec / calls as f64),
            format!("{:.0}", elapsed.as_secs_f64() * 1000.0),
        ]);
    }
    table
}
