//! What the fair lock's blocking tests share: the commands on the lock `f`,
//! its queue, and a waiter blocked on the server in a thread of its own.
#![allow(dead_code)] // each test file uses a part

use redis::{Commands, Connection, Value};
use std::thread::JoinHandle;
use testkit::{error_text, eventually, Server, PATIENCE};

pub const QUEUE: &str = "redisson_lock_queue:{f}";
pub const LONG: i64 = 60_000;

/// An error reply as a simple string, to compare.
fn reply(result: redis::RedisResult<Value>) -> Value {
    result.unwrap_or_else(|err| Value::SimpleString(error_text::<()>(Err(err))))
}

pub fn fair_acquire(con: &mut Connection, owner: &str, lease: i64, wait: Option<i64>) -> Value {
    let mut cmd = redis::cmd("RFAIR.ACQUIRE");
    cmd.arg("f").arg(owner).arg(lease);
    if let Some(wait) = wait {
        cmd.arg("WAIT").arg(wait);
    }
    reply(cmd.query(con))
}

pub fn fair_release(con: &mut Connection, owner: &str) -> Value {
    reply(redis::cmd("RFAIR.RELEASE").arg("f").arg(owner).query(con))
}

pub fn queue(con: &mut Connection) -> Vec<String> {
    con.lrange(QUEUE, 0, -1).unwrap()
}

/// A fair waiter blocked on `f` in a thread of its own (lease `lease`, wait
/// `wait`, block `block` ms); returns once its connection is blocked (or
/// its call already returned: granted at once, on a loaded machine, by a
/// lease that ran out). The thread runs `then` after the reply.
pub fn blocked<T: Send + 'static>(
    server: &Server,
    owner: &str,
    times: (i64, i64, i64),
    then: impl FnOnce(&mut Connection, Value) -> T + Send + 'static,
) -> JoinHandle<T> {
    blocked_with(server, owner, times, &[], then)
}

/// As [`blocked`], with `extra` arguments after `BLOCK block`.
pub fn blocked_with<T: Send + 'static>(
    server: &Server,
    owner: &str,
    (lease, wait, block): (i64, i64, i64),
    extra: &[&str],
    then: impl FnOnce(&mut Connection, Value) -> T + Send + 'static,
) -> JoinHandle<T> {
    let mut admin = server.connection();
    let mut con = server.connection();
    let id: i64 = redis::cmd("CLIENT").arg("ID").query(&mut con).unwrap();
    let mut cmd = redis::cmd("RFAIR.ACQUIRE");
    cmd.arg("f").arg(owner).arg(lease).arg("WAIT").arg(wait).arg("BLOCK").arg(block).arg(extra);
    let handle = std::thread::spawn(move || {
        let reply = reply(cmd.query(&mut con));
        then(&mut con, reply)
    });
    eventually("the waiter blocked", PATIENCE, || handle.is_finished() || is_blocked(&mut admin, id));
    handle
}

/// Whether the client `id` is blocked (`CLIENT LIST` flag `b`).
fn is_blocked(admin: &mut Connection, id: i64) -> bool {
    let line: String = redis::cmd("CLIENT").arg("LIST").arg("ID").arg(id).query(admin).unwrap();
    line.split(' ').any(|field| field.strip_prefix("flags=").is_some_and(|flags| flags.contains('b')))
}
