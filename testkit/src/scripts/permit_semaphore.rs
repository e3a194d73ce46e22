//! Redisson 4.x's permit-expirable semaphore scripts as Lua (ours, transcribed
//! from Redisson's; layout in docs/commands.md), with Redisson's exact
//! KEYS and ARGV: the reference the RPSEM commands are checked against.
//! Redisson passes its client's clock as `now`; tests pass the server's
//! (`crate::server_time_ms`).

use super::{evalsha, load_all, text, Caller, SemaphoreScripts};
use redis::{Cmd, ConnectionLike, RedisResult, Script};
use rlock_protocol::{permit_timeout_key, semaphore_channel, PERMIT_NEVER_EXPIRES};

pub struct PermitSemaphoreScripts {
    try_acquire: Script,
    release: Script,
    release_all: Script,
    update_lease: Script,
    lease: Script,
    available: Script,
    permits: Script,
    acquired: Script,
    set_permits: Script,
    add_permits: Script,
    /// trySetPermits is the semaphore's script.
    semaphore: SemaphoreScripts,
    caller: Caller,
}

impl Default for PermitSemaphoreScripts {
    fn default() -> Self {
        let script = |source: &str| Script::new(source);
        Self {
            try_acquire: script(include_str!("../../scripts/permit_semaphore/try_acquire.lua")),
            release: script(include_str!("../../scripts/permit_semaphore/release.lua")),
            release_all: script(include_str!("../../scripts/permit_semaphore/release_all.lua")),
            update_lease: script(include_str!("../../scripts/permit_semaphore/update_lease.lua")),
            lease: script(include_str!("../../scripts/permit_semaphore/lease.lua")),
            available: script(include_str!("../../scripts/permit_semaphore/available.lua")),
            permits: script(include_str!("../../scripts/permit_semaphore/permits.lua")),
            acquired: script(include_str!("../../scripts/permit_semaphore/acquired.lua")),
            set_permits: script(include_str!("../../scripts/permit_semaphore/set_permits.lua")),
            add_permits: script(include_str!("../../scripts/permit_semaphore/add_permits.lua")),
            semaphore: SemaphoreScripts::default(),
            caller: Caller::default(),
        }
    }
}

/// A permit's score: `now + lease_ms`, or never (`None`, a lease of -1).
fn expiry(now_ms: i64, lease_ms: Option<i64>) -> Vec<u8> {
    text(lease_ms.map_or(PERMIT_NEVER_EXPIRES, |lease| now_ms + lease))
}

impl PermitSemaphoreScripts {
    /// SCRIPT LOAD all of them (each method's command is an EVALSHA).
    pub fn load(&self, con: &mut dyn ConnectionLike) -> RedisResult<()> {
        self.semaphore.load(con)?;
        load_all(
            con,
            &[
                &self.try_acquire,
                &self.release,
                &self.release_all,
                &self.update_lease,
                &self.lease,
                &self.available,
                &self.permits,
                &self.acquired,
                &self.set_permits,
                &self.add_permits,
            ],
        )
    }

    /// tryAcquire: KEYS `[name, timeouts, channel]`, ARGV `[n, expiry, now,
    /// 922337203685477, publish, ids...]`; `OK`, `:<expiry>` or nil.
    pub fn try_acquire(&self, name: &[u8], ids: &[&[u8]], lease_ms: Option<i64>, now_ms: i64) -> Cmd {
        let (n, never, now) = (text(ids.len() as i64), text(PERMIT_NEVER_EXPIRES), text(now_ms));
        let expiry = expiry(now_ms, lease_ms);
        let mut args: Vec<&[u8]> = vec![&n, &expiry, &now, &never, self.caller.publish.as_bytes()];
        args.extend_from_slice(ids);
        keyed(&self.try_acquire, &timeouts_second(name), &args)
    }

    /// release(id): KEYS `[name, channel, timeouts]`, ARGV `[id, 1, now,
    /// publish]`; 1, or 0 (unknown, or its lease had run out: returned).
    pub fn release(&self, name: &[u8], id: &[u8], now_ms: i64) -> Cmd {
        keyed(&self.release, &timeouts_last(name), &[id, b"1", &text(now_ms), self.caller.publish.as_bytes()])
    }

    /// release(ids): KEYS `[name, channel, timeouts]`, ARGV `[count, now,
    /// publish, ids...]`; how many, or 0 (none returned).
    pub fn release_all(&self, name: &[u8], ids: &[&[u8]], now_ms: i64) -> Cmd {
        let (count, now) = (text(ids.len() as i64), text(now_ms));
        let mut args: Vec<&[u8]> = vec![&count, &now, self.caller.publish.as_bytes()];
        args.extend_from_slice(ids);
        keyed(&self.release_all, &timeouts_last(name), &args)
    }

    /// updateLeaseTime: KEYS `[name, timeouts, channel]`, ARGV `[id, expiry,
    /// now, publish]`; 1 or 0.
    pub fn update_lease(&self, name: &[u8], id: &[u8], lease_ms: Option<i64>, now_ms: i64) -> Cmd {
        let args: [&[u8]; 4] = [id, &expiry(now_ms, lease_ms), &text(now_ms), self.caller.publish.as_bytes()];
        keyed(&self.update_lease, &timeouts_second(name), &args)
    }

    /// getLeaseTime: KEYS `[name, timeouts, channel]`, ARGV `[id,
    /// 922337203685477, now, publish]`; -1, the ms left, or 0.
    pub fn lease(&self, name: &[u8], id: &[u8], now_ms: i64) -> Cmd {
        let args: [&[u8]; 4] = [id, &text(PERMIT_NEVER_EXPIRES), &text(now_ms), self.caller.publish.as_bytes()];
        keyed(&self.lease, &timeouts_second(name), &args)
    }

    /// availablePermits: KEYS `[name, timeouts, channel]`, ARGV `[now,
    /// publish]`; an integer, or GET's bulk string.
    pub fn available(&self, name: &[u8], now_ms: i64) -> Cmd {
        keyed(&self.available, &timeouts_second(name), &[&text(now_ms), self.caller.publish.as_bytes()])
    }

    /// getPermits: as [`Self::available`]; available plus taken.
    pub fn permits(&self, name: &[u8], now_ms: i64) -> Cmd {
        keyed(&self.permits, &timeouts_second(name), &[&text(now_ms), self.caller.publish.as_bytes()])
    }

    /// acquiredPermits: as [`Self::available`]; how many are taken.
    pub fn acquired(&self, name: &[u8], now_ms: i64) -> Cmd {
        keyed(&self.acquired, &timeouts_second(name), &[&text(now_ms), self.caller.publish.as_bytes()])
    }

    /// trySetPermits: the semaphore's script.
    pub fn try_set_permits(&self, name: &[u8], permits: i64, ttl_ms: Option<i64>) -> Cmd {
        self.semaphore.try_set_permits(name, permits, ttl_ms)
    }

    /// setPermits: KEYS `[name, channel, timeouts]`, ARGV `[n, publish]`; nil.
    pub fn set_permits(&self, name: &[u8], permits: i64) -> Cmd {
        keyed(&self.set_permits, &timeouts_last(name), &[&text(permits), self.caller.publish.as_bytes()])
    }

    /// addPermits: KEYS `[name, channel]`, ARGV `[d, publish]`; nil.
    pub fn add_permits(&self, name: &[u8], delta: i64) -> Cmd {
        let keys: [&[u8]; 2] = [name, &semaphore_channel(name)];
        evalsha(&self.add_permits, &keys, &[&text(delta), self.caller.publish.as_bytes()])
    }
}

/// `[name, timeouts, channel]`
fn timeouts_second(name: &[u8]) -> [Vec<u8>; 3] {
    [name.to_vec(), permit_timeout_key(name), semaphore_channel(name)]
}

/// `[name, channel, timeouts]`
fn timeouts_last(name: &[u8]) -> [Vec<u8>; 3] {
    [name.to_vec(), semaphore_channel(name), permit_timeout_key(name)]
}

fn keyed(script: &Script, keys: &[Vec<u8>; 3], args: &[&[u8]]) -> Cmd {
    let keys: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    evalsha(script, &keys, args)
}
