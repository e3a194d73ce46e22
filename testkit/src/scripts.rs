//! Redisson's lock protocol as Lua scripts (ours, written from
//! `shared/docs/redisson-lock-protocol.md`): the reference the RLOCK
//! commands are checked against, and the "Java service" in interop tests.

use redis::{ConnectionLike, RedisResult, Script, Value};

/// The message Redisson publishes on release.
pub const UNLOCK_MESSAGE: &str = "0";

/// Redisson's release channel: the name goes in a hash tag unless it has one.
pub fn release_channel(name: &[u8]) -> Vec<u8> {
    let mut channel = b"redisson_lock__channel:".to_vec();
    if name.contains(&b'{') {
        channel.extend_from_slice(name);
    } else {
        channel.push(b'{');
        channel.extend_from_slice(name);
        channel.push(b'}');
    }
    channel
}

/// The four scripts, loaded once per connection on first use (EVALSHA,
/// falling back to EVAL).
pub struct RedissonScripts {
    acquire: Script,
    renew: Script,
    release: Script,
    force_release: Script,
}

impl Default for RedissonScripts {
    fn default() -> Self {
        Self {
            acquire: Script::new(include_str!("../scripts/acquire.lua")),
            renew: Script::new(include_str!("../scripts/renew.lua")),
            release: Script::new(include_str!("../scripts/release.lua")),
            force_release: Script::new(include_str!("../scripts/force_release.lua")),
        }
    }
}

impl RedissonScripts {
    /// nil when acquired or re-entered, else the holder's PTTL.
    pub fn acquire(&self, con: &mut dyn ConnectionLike, name: &[u8], owner: &[u8], lease_ms: i64) -> RedisResult<Value> {
        self.acquire.key(name).arg(lease_ms).arg(owner).invoke(con)
    }

    /// 1 when renewed, 0 when not held.
    pub fn renew(&self, con: &mut dyn ConnectionLike, name: &[u8], owner: &[u8], lease_ms: i64) -> RedisResult<Value> {
        self.renew.key(name).arg(lease_ms).arg(owner).invoke(con)
    }

    /// nil when not held, 0 when one level released, 1 when fully released.
    pub fn release(&self, con: &mut dyn ConnectionLike, name: &[u8], owner: &[u8], lease_ms: i64) -> RedisResult<Value> {
        self.release
            .key(name)
            .key(release_channel(name))
            .arg(UNLOCK_MESSAGE)
            .arg(lease_ms)
            .arg(owner)
            .invoke(con)
    }

    /// 1 when a key was deleted, else 0.
    pub fn force_release(&self, con: &mut dyn ConnectionLike, name: &[u8]) -> RedisResult<Value> {
        self.force_release.key(name).key(release_channel(name)).arg(UNLOCK_MESSAGE).invoke(con)
    }

    /// The scripts' sources, for callers that send EVAL/EVALSHA themselves
    /// (pipelines, benchmarks): acquire, renew, release, force-release.
    pub fn scripts(&self) -> [&Script; 4] {
        [&self.acquire, &self.renew, &self.release, &self.force_release]
    }
}
