//! Shared by the Redisson filter tests: Redisson's script texts (read
#![allow(dead_code)]
//! from its jar), calls as Redisson sends them, INFO counters.

pub mod one_key_filter;

use redis::{Cmd, Connection, RedisResult, Value};

pub use testkit::redisson_lock::*;

/// Runs a script as Redisson does: EVALSHA by SHA-1, or EVAL with the body.
pub fn call(con: &mut Connection, by_sha: bool, body: &[u8], keys: &[&[u8]], args: &[&[u8]]) -> RedisResult<Value> {
    script_call(by_sha, body, keys, args).query(con)
}

/// A script call as Redisson sends it.
pub fn script_call(by_sha: bool, body: &[u8], keys: &[&[u8]], args: &[&[u8]]) -> Cmd {
    let mut cmd = if by_sha { redis::cmd("EVALSHA") } else { redis::cmd("EVAL") };
    if by_sha {
        cmd.arg(sha1_hex(body));
    } else {
        cmd.arg(body);
    }
    cmd.arg(keys.len()).arg(keys).arg(args);
    cmd
}

/// The RLock calls run natively.
pub fn native_count(con: &mut Connection) -> i64 {
    family_native_count(con, "lock")
}

/// How many calls of `family`'s scripts ran natively.
pub fn family_native_count(con: &mut Connection, family: &str) -> i64 {
    testkit::rlock_info(con, &format!("redisson_native_{family}"))
}

/// Loads `bodies` into the script cache, for EVALSHA.
pub fn load(con: &mut Connection, bodies: &[&[u8]]) {
    for body in bodies {
        let _: String = redis::cmd("SCRIPT").arg("LOAD").arg(*body).query(con).unwrap();
    }
}
