//! Redisson 4.x's fenced-lock acquire as Lua (ours, transcribed from
//! Redisson's; layout in docs/commands.md), with Redisson's exact
//! KEYS and ARGV. Release, renewal and force release are RLock's:
//! [`crate::RedissonScripts`].

use super::{evalsha, load_all, text};
use redis::{Cmd, ConnectionLike, RedisResult, Script};
use rlock_protocol::fenced_token_key;

pub struct FencedScripts {
    acquire: Script,
}

impl Default for FencedScripts {
    fn default() -> Self {
        Self { acquire: Script::new(include_str!("../../scripts/fenced/acquire.lua")) }
    }
}

impl FencedScripts {
    /// SCRIPT LOAD it (the command is an EVALSHA).
    pub fn load(&self, con: &mut dyn ConnectionLike) -> RedisResult<()> {
        load_all(con, &[&self.acquire])
    }

    /// lockAndGetToken: KEYS `[name, tokenKey]`, ARGV `[lease, owner]`;
    /// `[-1, token]` or `[pttl, -1]`.
    pub fn acquire(&self, name: &[u8], owner: &[u8], lease_ms: i64) -> Cmd {
        evalsha(&self.acquire, &[name, &fenced_token_key(name)], &[&text(lease_ms), owner])
    }
}
