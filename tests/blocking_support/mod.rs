//! What the blocking tests share: a caller blocked in a thread of its own,
//! and the lock's commands.
#![allow(dead_code)] // each test file uses a part

use redis::{Commands, Connection, Value};
use std::thread::JoinHandle;
use std::time::Duration;
use testkit::{error_text, eventually, rlock_info, Server, SharedServer, PATIENCE};

pub const LONG_LEASE: &str = "60000";

pub fn acquire(con: &mut Connection, key: &str, owner: &str, lease: &str) -> Value {
    redis::cmd("RLOCK.ACQUIRE").arg(key).arg(owner).arg(lease).query(con).unwrap()
}

/// A caller blocked on `key` in a thread of its own; returns once the
/// server counts it blocked. The thread runs `then` after the reply.
pub fn waiter<T: Send + 'static>(
    server: &Server,
    key: &str,
    owner: &str,
    wait_ms: u64,
    then: impl FnOnce(&mut Connection, Value) -> T + Send + 'static,
) -> JoinHandle<T> {
    let wait_ms = wait_ms.to_string();
    waiter_with(server, &[key, owner, LONG_LEASE, "WAIT", &wait_ms], then)
}

/// As [`waiter`], for `RLOCK.ACQUIRE args…` (which must block).
pub fn waiter_with<T: Send + 'static>(
    server: &Server,
    args: &[&str],
    then: impl FnOnce(&mut Connection, Value) -> T + Send + 'static,
) -> JoinHandle<T> {
    let mut admin = server.connection();
    let before = rlock_info(&mut admin, "blocked");
    let mut con = server.connection();
    let command = redis::cmd("RLOCK.ACQUIRE").arg(args).clone();
    let handle = std::thread::spawn(move || {
        let reply: Value =
            command.query(&mut con).unwrap_or_else(|err| Value::SimpleString(error_text::<()>(Err(err))));
        then(&mut con, reply)
    });
    eventually("the waiter blocked", PATIENCE, || rlock_info(&mut admin, "blocked") == before + 1);
    handle
}

pub fn alive(server: &Server) -> bool {
    let Ok(mut con) = server.client().get_connection_with_timeout(Duration::from_secs(2)) else { return false };
    redis::cmd("PING").query::<String>(&mut con).is_ok()
}

pub fn assert_no_crash(server: &Server) {
    let log = server.log();
    assert!(alive(server), "the server died:\n{log}");
    assert!(!log.contains("ASSERTION") && !log.contains("crashed by signal"), "crash in log:\n{log}");
}

pub fn debug_server() -> SharedServer {
    Server::builder().config("enable-debug-command", "yes").config("enable-module-command", "yes").shared()
}

pub fn holders(con: &mut Connection, key: &str) -> Vec<String> {
    con.hkeys(key).unwrap()
}

pub fn release(con: &mut Connection, key: &str, owner: &str) -> Value {
    redis::cmd("RLOCK.RELEASE").arg(key).arg(owner).query(con).unwrap()
}

/// Waits until the caller blocked on `key` has waited `ms`, by the
/// server's count (`waited_ms` of `RLOCK.WAITERS`): a wait to measure.
pub fn until_waited(con: &mut Connection, key: &str, ms: i64) {
    let waited = |con: &mut Connection| {
        let waiters: Vec<Vec<Value>> = redis::cmd("RLOCK.WAITERS").arg(key).query(con).unwrap();
        let fields = waiters.first().expect("a caller blocked");
        let at = fields.iter().position(|field| matches!(field, Value::BulkString(name) if name == b"waited_ms"));
        redis::from_redis_value::<i64>(fields[at.expect("waited_ms") + 1].clone()).unwrap()
    };
    eventually(&format!("{ms} ms waited on {key}"), PATIENCE, || waited(con) >= ms);
}

/// The connection answers its next command in step (no reply left over).
pub fn in_step(con: &mut Connection) {
    let echo: String = redis::cmd("ECHO").arg("in-step").query(con).unwrap();
    assert_eq!(echo, "in-step", "protocol desync");
}
