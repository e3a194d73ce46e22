//! Every real write of the RLOCK commands aborts another
//! client's WATCH, and sends a RESP3 tracking invalidation, whether the
//! command runs alone, inside MULTI/EXEC or from EVAL.

use redis::{Connection, Value};
use testkit::{invalidated, unlock_latch_key, Server, SharedServer, Tracker};

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

fn server() -> SharedServer {
    Server::builder().config("enable-debug-command", "yes").shared()
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
            tracker.send(&[b"EXISTS".as_slice(), &key]);
            tracker.sync();
            wrapped(how, &write).iter().for_each(|cmd| drop(run(&mut other, cmd)));
            let received = tracker.sync();
            if !invalidated(&received) {
                failures.push(format!("{what} ({how}) sent no invalidation"));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
