//! Redisson 4.x's semaphore scripts as Lua (ours, transcribed from
//! Redisson's; layout in docs/commands.md), with Redisson's exact
//! KEYS and ARGV: the reference the RSEM commands are checked against.

use super::{evalsha, load_all, text, Caller};
use redis::{Cmd, ConnectionLike, RedisResult, Script};
use rlock_protocol::semaphore_channel;

pub struct SemaphoreScripts {
    try_acquire: Script,
    release: Script,
    release_if_exists: Script,
    try_set_permits: Script,
    try_set_permits_ttl: Script,
    add_permits: Script,
    drain: Script,
    caller: Caller,
}

impl Default for SemaphoreScripts {
    fn default() -> Self {
        Self {
            try_acquire: Script::new(include_str!("../../scripts/semaphore/try_acquire.lua")),
            release: Script::new(include_str!("../../scripts/semaphore/release.lua")),
            release_if_exists: Script::new(include_str!("../../scripts/semaphore/release_if_exists.lua")),
            try_set_permits: Script::new(include_str!("../../scripts/semaphore/try_set_permits.lua")),
            try_set_permits_ttl: Script::new(include_str!("../../scripts/semaphore/try_set_permits_ttl.lua")),
            add_permits: Script::new(include_str!("../../scripts/semaphore/add_permits.lua")),
            drain: Script::new(include_str!("../../scripts/semaphore/drain.lua")),
            caller: Caller::default(),
        }
    }
}

impl SemaphoreScripts {
    /// The same scripts called as `caller` calls them (publish command).
    pub fn with_caller(caller: Caller) -> Self {
        Self { caller, ..Self::default() }
    }

    /// SCRIPT LOAD all of them (each method's command is an EVALSHA).
    pub fn load(&self, con: &mut dyn ConnectionLike) -> RedisResult<()> {
        load_all(
            con,
            &[
                &self.try_acquire,
                &self.release,
                &self.release_if_exists,
                &self.try_set_permits,
                &self.try_set_permits_ttl,
                &self.add_permits,
                &self.drain,
            ],
        )
    }

    /// tryAcquire(permits): KEYS `[name]`, ARGV `[permits]`; 1 or 0.
    pub fn try_acquire(&self, name: &[u8], permits: i64) -> Cmd {
        evalsha(&self.try_acquire, &[name], &[&text(permits)])
    }

    /// release(permits) or, with `if_exists`, releaseIfExists: KEYS `[name,
    /// channel]`, ARGV `[permits, publish]`; nil, or 1 / 0.
    pub fn release(&self, name: &[u8], permits: i64, if_exists: bool) -> Cmd {
        let script = if if_exists { &self.release_if_exists } else { &self.release };
        evalsha(script, &[name, &semaphore_channel(name)], &[&text(permits), self.caller.publish.as_bytes()])
    }

    /// trySetPermits(permits[, ttl]): KEYS `[name, channel]`, ARGV
    /// `[permits, publish[, ttl]]`; 1 or 0.
    pub fn try_set_permits(&self, name: &[u8], permits: i64, ttl_ms: Option<i64>) -> Cmd {
        let keys: [&[u8]; 2] = [name, &semaphore_channel(name)];
        let (permits, publish) = (text(permits), self.caller.publish.as_bytes());
        match ttl_ms {
            None => evalsha(&self.try_set_permits, &keys, &[&permits, publish]),
            Some(ttl) => evalsha(&self.try_set_permits_ttl, &keys, &[&permits, publish, &text(ttl)]),
        }
    }

    /// addPermits(delta): KEYS `[name, channel]`, ARGV `[delta, publish]`; nil.
    pub fn add_permits(&self, name: &[u8], delta: i64) -> Cmd {
        evalsha(&self.add_permits, &[name, &semaphore_channel(name)], &[&text(delta), self.caller.publish.as_bytes()])
    }

    /// drainPermits: KEYS `[name]`; the old value (bulk) or 0.
    pub fn drain(&self, name: &[u8]) -> Cmd {
        evalsha(&self.drain, &[name], &[])
    }
}
