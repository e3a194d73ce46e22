//! Redisson 4.7's read-write-lock scripts as Lua (ours, transcribed from
//! Redisson's; layout in docs/commands.md): the reference
//! the RRW commands are checked against, and the "Java service" of interop
//! tests. KEYS and ARGV are exactly Redisson's. Owners given here are base
//! owners (`<uuid>:<thread>`): the write side's `:write` is appended here,
//! as Redisson does. The write side renews with the RLock batch renew
//! ([`crate::RedissonScripts::renew_batch`] with the `:write` owner).

use super::{evalsha, load_all, text, Caller};
use redis::{Cmd, ConnectionLike, RedisResult, Script};
use rlock_protocol::{rwlock_channel, rwlock_key_prefix, rwlock_timeout_prefix, rwlock_write_field, unlock_latch_key};

/// What a read release or read force release publishes (wake one waiter).
const READ_MESSAGE: &[u8] = b"0";
/// What a write release or write force release publishes (wake all).
const WRITE_MESSAGE: &[u8] = b"1";

/// The read-write-lock scripts, called as one Redisson client calls them.
pub struct RwScripts {
    read_acquire: Script,
    read_release: Script,
    read_renew: Script,
    write_acquire: Script,
    write_release: Script,
    force_release_read: Script,
    force_release_write: Script,
    caller: Caller,
}

impl Default for RwScripts {
    fn default() -> Self {
        Self {
            read_acquire: Script::new(include_str!("../../scripts/rwlock/read_acquire.lua")),
            read_release: Script::new(include_str!("../../scripts/rwlock/read_release.lua")),
            read_renew: Script::new(include_str!("../../scripts/rwlock/read_renew.lua")),
            write_acquire: Script::new(include_str!("../../scripts/rwlock/write_acquire.lua")),
            write_release: Script::new(include_str!("../../scripts/rwlock/write_release.lua")),
            force_release_read: Script::new(include_str!("../../scripts/rwlock/force_release_read.lua")),
            force_release_write: Script::new(include_str!("../../scripts/rwlock/force_release_write.lua")),
            caller: Caller::default(),
        }
    }
}

impl RwScripts {
    /// The same scripts called as `caller` calls them (publish command and
    /// latch).
    pub fn with_caller(caller: Caller) -> Self {
        Self { caller, ..Self::default() }
    }

    /// SCRIPT LOAD all of them (each method's command is an EVALSHA).
    pub fn load(&self, con: &mut dyn ConnectionLike) -> RedisResult<()> {
        load_all(
            con,
            &[
                &self.read_acquire,
                &self.read_release,
                &self.read_renew,
                &self.write_acquire,
                &self.write_release,
                &self.force_release_read,
                &self.force_release_write,
            ],
        )
    }

    /// readLock().tryLock: KEYS `[name, P]`, ARGV `[lease, owner,
    /// owner:write]`. nil when acquired or re-entered, else the PTTL.
    pub fn read_acquire(&self, name: &[u8], owner: &[u8], lease_ms: i64) -> Cmd {
        let keys: [&[u8]; 2] = [name, &rwlock_timeout_prefix(name, owner)];
        evalsha(&self.read_acquire, &keys, &[&text(lease_ms), owner, &rwlock_write_field(owner)])
    }

    /// readLock().unlock with the latch of `request_id`: KEYS `[name,
    /// channel, P, K, L]`, ARGV `[0, owner, publish, latch]`. nil / 0 / 1.
    pub fn read_release(&self, name: &[u8], owner: &[u8], request_id: &[u8]) -> Cmd {
        let keys: [&[u8]; 5] = [
            name,
            &rwlock_channel(name),
            &rwlock_timeout_prefix(name, owner),
            &rwlock_key_prefix(name),
            &unlock_latch_key(name, request_id),
        ];
        let args: [&[u8]; 4] = [READ_MESSAGE, owner, self.caller.publish.as_bytes(), &text(self.caller.latch_ms)];
        evalsha(&self.read_release, &keys, &args)
    }

    /// The read side's watchdog round (4.4+): for each `(name, owners)`,
    /// KEYS `name, K` and ARGV `n, owner_1 .. owner_n` after the lease.
    /// Replies one 1 (renewed) or 0 per name.
    pub fn read_renew(&self, lease_ms: i64, holds: &[(&[u8], &[&[u8]])]) -> Cmd {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(self.read_renew.get_hash()).arg(holds.len() * 2);
        for (name, _) in holds {
            cmd.arg(*name).arg(rwlock_key_prefix(name));
        }
        cmd.arg(lease_ms);
        for (_, owners) in holds {
            cmd.arg(owners.len()).arg(*owners);
        }
        cmd
    }

    /// writeLock().tryLock: KEYS `[name]`, ARGV `[lease, owner:write]`. nil
    /// when acquired or re-entered, else the PTTL.
    pub fn write_acquire(&self, name: &[u8], owner: &[u8], lease_ms: i64) -> Cmd {
        evalsha(&self.write_acquire, &[name], &[&text(lease_ms), &rwlock_write_field(owner)])
    }

    /// writeLock().unlock with the latch of `request_id`: KEYS `[name,
    /// channel, L]`, ARGV `[1, lease, owner:write, publish, latch]`.
    /// nil / 0 / 1.
    pub fn write_release(&self, name: &[u8], owner: &[u8], lease_ms: i64, request_id: &[u8]) -> Cmd {
        let keys: [&[u8]; 3] = [name, &rwlock_channel(name), &unlock_latch_key(name, request_id)];
        let args: [&[u8]; 5] = [
            WRITE_MESSAGE,
            &text(lease_ms),
            &rwlock_write_field(owner),
            self.caller.publish.as_bytes(),
            &text(self.caller.latch_ms),
        ];
        evalsha(&self.write_release, &keys, &args)
    }

    /// forceUnlock of the write side (`write`, deletes a write-mode lock,
    /// publishes 1) or of the read side (a read-mode lock, publishes 0):
    /// KEYS `[name, channel]`, ARGV `[message, publish]`. 1 or 0.
    pub fn force_release(&self, name: &[u8], write: bool) -> Cmd {
        let (script, message) =
            if write { (&self.force_release_write, WRITE_MESSAGE) } else { (&self.force_release_read, READ_MESSAGE) };
        evalsha(script, &[name, &rwlock_channel(name)], &[message, self.caller.publish.as_bytes()])
    }
}
