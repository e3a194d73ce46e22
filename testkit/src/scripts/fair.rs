//! Redisson 4.7's fair-lock scripts as Lua (ours, transcribed from
//! Redisson's; layout in docs/commands.md): the reference
//! the RFAIR commands are checked against, and the "Java service" of
//! interop tests. KEYS and ARGV are exactly Redisson's; `now` is passed in
//! as Redisson does (tests pass the server's clock). Renewal is the RLock
//! batch renew: [`crate::RedissonScripts::renew_batch`].

use super::{evalsha, load_all, text, Caller};
use redis::{Cmd, ConnectionLike, RedisResult, Script};
use rlock_protocol::{fair_queue_key, fair_timeout_key, release_channel, unlock_latch_key, UNLOCK_MESSAGE};

/// The fair-lock scripts, called as one Redisson client calls them.
pub struct FairScripts {
    acquire: Script,
    try_acquire: Script,
    cancel: Script,
    release: Script,
    force_release: Script,
    caller: Caller,
}

impl Default for FairScripts {
    fn default() -> Self {
        Self {
            acquire: with_fragments(include_str!("../../scripts/fair/acquire.lua")),
            try_acquire: with_fragments(include_str!("../../scripts/fair/try_acquire.lua")),
            cancel: Script::new(include_str!("../../scripts/fair/cancel.lua")),
            release: with_fragments(include_str!("../../scripts/fair/release.lua")),
            force_release: with_fragments(include_str!("../../scripts/fair/force_release.lua")),
            caller: Caller::default(),
        }
    }
}

/// Pastes the shared purge (and grant) steps where a script names them.
fn with_fragments(source: &str) -> Script {
    Script::new(
        &source
            .replace("--PURGE--", include_str!("../../scripts/fair/purge.lua"))
            .replace("--GRANT--", include_str!("../../scripts/fair/grant.lua")),
    )
}

impl FairScripts {
    /// The same scripts called as `caller` calls them (publish command,
    /// latch and fair wait timeout).
    pub fn with_caller(caller: Caller) -> Self {
        Self { caller, ..Self::default() }
    }

    /// SCRIPT LOAD all of them (each method's command is an EVALSHA).
    pub fn load(&self, con: &mut dyn ConnectionLike) -> RedisResult<()> {
        load_all(con, &[&self.acquire, &self.try_acquire, &self.cancel, &self.release, &self.force_release])
    }

    /// tryLock. `Some(wait_ms)`: the waiting form, KEYS `[name, Q, Z]`,
    /// ARGV `[lease, owner, wait, now]`: nil when acquired or re-entered,
    /// else a hint, and the caller is queued. `None`: the no-wait form,
    /// ARGV `[lease, owner, now, wait]` with the caller's fair wait
    /// timeout: nil or 1, never queues.
    pub fn acquire(&self, name: &[u8], owner: &[u8], lease_ms: i64, wait_ms: Option<i64>, now_ms: i64) -> Cmd {
        let keys: [&[u8]; 3] = [name, &fair_queue_key(name), &fair_timeout_key(name)];
        let (lease, now) = (text(lease_ms), text(now_ms));
        match wait_ms {
            Some(wait) => evalsha(&self.acquire, &keys, &[&lease, owner, &text(wait), &now]),
            None => evalsha(&self.try_acquire, &keys, &[&lease, owner, &now, &text(self.caller.fair_wait_ms)]),
        }
    }

    /// acquireFailed (give up waiting): KEYS `[Q, Z]`, ARGV `[owner, wait]`.
    /// Replies nil.
    pub fn cancel(&self, name: &[u8], owner: &[u8], wait_ms: i64) -> Cmd {
        evalsha(&self.cancel, &[&fair_queue_key(name), &fair_timeout_key(name)], &[owner, &text(wait_ms)])
    }

    /// unlock with the latch of `request_id`: KEYS `[name, Q, Z, channel,
    /// L]`, ARGV `[0, lease, owner, now, publish, latch]`. nil / 0 / 1; the
    /// head waiter is told on `channel:<head>`.
    pub fn release(&self, name: &[u8], owner: &[u8], lease_ms: i64, request_id: &[u8], now_ms: i64) -> Cmd {
        let keys: [&[u8]; 5] = [
            name,
            &fair_queue_key(name),
            &fair_timeout_key(name),
            &release_channel(name),
            &unlock_latch_key(name, request_id),
        ];
        let args: [&[u8]; 6] = [
            UNLOCK_MESSAGE,
            &text(lease_ms),
            owner,
            &text(now_ms),
            self.caller.publish.as_bytes(),
            &text(self.caller.latch_ms),
        ];
        evalsha(&self.release, &keys, &args)
    }

    /// forceUnlock: KEYS `[name, Q, Z, channel]`, ARGV `[0, now, publish]`.
    /// 1 when the lock was deleted (the head is told), else 0.
    pub fn force_release(&self, name: &[u8], now_ms: i64) -> Cmd {
        let keys: [&[u8]; 4] = [name, &fair_queue_key(name), &fair_timeout_key(name), &release_channel(name)];
        evalsha(&self.force_release, &keys, &[UNLOCK_MESSAGE, &text(now_ms), self.caller.publish.as_bytes()])
    }
}
