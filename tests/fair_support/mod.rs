//! What the fair lock's blocking tests share: the commands on the lock `f`,
//! its queue, and a waiter blocked on the server in a thread of its own.
#![allow(dead_code)] // each test file uses a part

use crate::blocking_support::{info, PATIENCE};
use redis::{Commands, Connection, Value};
use std::thread::JoinHandle;
use testkit::{error_text, eventually, Server};

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
/// `wait`, block `block` ms); returns once the server counts it blocked.
/// The thread runs `then` after the reply.
pub fn blocked<T: Send + 'static>(
    server: &Server,
    owner: &str,
    (lease, wait, block): (i64, i64, i64),
    then: impl FnOnce(&mut Connection, Value) -> T + Send + 'static,
) -> JoinHandle<T> {
    let mut admin = server.connection();
    let before = info(&mut admin, "blocked");
    let mut con = server.connection();
    let owner = owner.to_string();
    let handle = std::thread::spawn(move || {
        let mut cmd = redis::cmd("RFAIR.ACQUIRE");
        cmd.arg("f").arg(&owner).arg(lease).arg("WAIT").arg(wait).arg("BLOCK").arg(block);
        let reply = reply(cmd.query(&mut con));
        then(&mut con, reply)
    });
    eventually("the waiter blocked", PATIENCE, || info(&mut admin, "blocked") == before + 1);
    handle
}
