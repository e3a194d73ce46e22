//! Shared by the Redisson filter tests: Redisson's script texts (read
#![allow(dead_code)]
//! from its jar), calls as Redisson sends them, INFO counters.

use redis::{Connection, RedisResult, Value};
use testkit::redisson_scripts;

pub const ACQUIRE_SHA: &str = "149c5a8bf18676fd99e9e6e24923bd64d9b62f94";
pub const RELEASE_SHA: &str = "6866459238a13a701d42f4971f12d9f3a50e2442";
pub const FORCE_SHA: &str = "605e338249a7a1d40df83b04f7658354f883b41b";

/// The newest Redisson tested: its RLock texts are the filter's.
pub const VERSION: &str = "4.7.0";

pub struct Scripts {
    pub acquire: Vec<u8>,
    pub release: Vec<u8>,
    pub force: Vec<u8>,
}

fn sha1_hex(text: &[u8]) -> String {
    redis::Script::new(std::str::from_utf8(text).expect("UTF-8 script")).get_hash().to_owned()
}

/// RedissonLock's texts of `version`, found by their SHA-1.
pub fn scripts(version: &str) -> Scripts {
    let [acquire, release, force] = texts(version, "org/redisson/RedissonLock", [ACQUIRE_SHA, RELEASE_SHA, FORCE_SHA]);
    Scripts { acquire, release, force }
}

/// The texts of `class` in Redisson `version` whose SHA-1s are `shas`, in
/// that order; fails when one is not there.
pub fn texts<const N: usize>(version: &str, class: &str, shas: [&str; N]) -> [Vec<u8>; N] {
    let texts = redisson_scripts(version, class);
    shas.map(|sha| {
        texts.iter().find(|text| sha1_hex(text) == sha).cloned().unwrap_or_else(|| panic!("{sha} not in {version}"))
    })
}

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

/// INFO rlock's count of one family's calls run natively.
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
