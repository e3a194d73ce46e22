//! Shared by the Redisson filter tests: Redisson's RLock script texts
#![allow(dead_code)]
//! (read from its jar), calls as Redisson sends them, INFO counters.

use redis::{Connection, RedisResult, Value};

pub use testkit::redisson_lock::*;

/// Runs a script as Redisson does: EVALSHA by SHA-1, or EVAL with the body.
pub fn call(con: &mut Connection, by_sha: bool, body: &[u8], keys: &[&[u8]], args: &[&[u8]]) -> RedisResult<Value> {
    let mut cmd = if by_sha { redis::cmd("EVALSHA") } else { redis::cmd("EVAL") };
    if by_sha {
        cmd.arg(sha1_hex(body));
    } else {
        cmd.arg(body);
    }
    cmd.arg(keys.len()).arg(keys).arg(args).query(con)
}

pub fn info_field(con: &mut Connection, section: &str, name: &str) -> String {
    let info: String = redis::cmd("INFO").arg(section).query(con).unwrap();
    let prefix = format!("{name}:");
    info.lines().find_map(|line| line.strip_prefix(&prefix)).unwrap_or_default().trim().to_owned()
}

pub fn native_count(con: &mut Connection) -> i64 {
    family_native_count(con, "lock")
}

/// Calls of `family`'s scripts run natively (`rlock_redisson_native_<family>`).
pub fn family_native_count(con: &mut Connection, family: &str) -> i64 {
    info_field(con, "rlock", &format!("rlock_redisson_native_{family}")).parse().unwrap()
}

pub fn set_mode(con: &mut Connection, mode: &str) {
    let _: () = redis::cmd("CONFIG").arg(&["SET", "rlock.redisson-scripts", mode]).query(con).unwrap();
}

/// Valkey answers INFO server with its name.
pub fn is_valkey(con: &mut Connection) -> bool {
    info_field(con, "server", "server_name") == "valkey"
}
