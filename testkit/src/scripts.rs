//! Redisson's lock protocol as Lua scripts (ours, transcribed from
//! Redisson's; layout in docs/commands.md): the reference the RLOCK
//! commands are checked against, and the "Java service" in interop tests.
//! The rest of the lock family is in [`fair`] and [`rwlock`].

mod countdown;
mod fair;
mod fenced;
mod permit_semaphore;
mod rwlock;
mod semaphore;

use redis::{Cmd, ConnectionLike, RedisResult, Script};

pub use fair::FairScripts;
pub use permit_semaphore::PermitSemaphoreScripts;
pub use rwlock::RwScripts;
pub use {countdown::LatchScripts, fenced::FencedScripts, semaphore::SemaphoreScripts};

pub use rlock_protocol::{release_channel, unlock_latch_key};

/// The message Redisson publishes on release.
pub const UNLOCK_MESSAGE: &[u8] = rlock_protocol::UNLOCK_MESSAGE;

/// How one Redisson client calls the family's scripts: settings of the
/// client, not of a call.
#[derive(Clone, Debug)]
pub struct Caller {
    /// `publish`, or `spublish` for a client in sharded pub/sub mode.
    pub publish: String,
    /// The unlock latch's PX (Redisson: 16000 to 20000 by default).
    pub latch_ms: i64,
    /// `fairLockWaitTimeout`: the wait of the fair lock's no-wait acquire.
    pub fair_wait_ms: i64,
}

impl Default for Caller {
    fn default() -> Self {
        Self {
            publish: "publish".to_owned(),
            latch_ms: rlock_protocol::DEFAULT_LATCH_MS,
            fair_wait_ms: rlock_protocol::DEFAULT_FAIR_WAIT_MS,
        }
    }
}

/// The RLock scripts. [`RedissonScripts::load`] them once per server, then
/// each method gives the EVALSHA command, to query or pipeline.
pub struct RedissonScripts {
    acquire: Script,
    renew: Script,
    renew_batch: Script,
    release: Script,
    release_latched: Script,
    force_release: Script,
}

impl Default for RedissonScripts {
    fn default() -> Self {
        Self {
            acquire: Script::new(include_str!("../scripts/acquire.lua")),
            renew: Script::new(include_str!("../scripts/renew.lua")),
            renew_batch: Script::new(include_str!("../scripts/renew_batch.lua")),
            release: Script::new(include_str!("../scripts/release.lua")),
            release_latched: Script::new(include_str!("../scripts/release_latched.lua")),
            force_release: Script::new(include_str!("../scripts/force_release.lua")),
        }
    }
}

impl RedissonScripts {
    /// SCRIPT LOAD all of them.
    pub fn load(&self, con: &mut dyn ConnectionLike) -> RedisResult<()> {
        load_all(
            con,
            &[&self.acquire, &self.renew, &self.renew_batch, &self.release, &self.release_latched, &self.force_release],
        )
    }

    /// Replies nil when acquired or re-entered, else the holder's PTTL.
    pub fn acquire(&self, name: &[u8], owner: &[u8], lease_ms: i64) -> Cmd {
        evalsha(&self.acquire, &[name], &[&lease_ms.to_string().into_bytes(), owner])
    }

    /// Replies 1 when renewed, 0 when not held.
    pub fn renew(&self, name: &[u8], owner: &[u8], lease_ms: i64) -> Cmd {
        evalsha(&self.renew, &[name], &[&lease_ms.to_string().into_bytes(), owner])
    }

    /// Redisson 3.44+'s watchdog round: KEYS the lock names, ARGV the lease
    /// then each name's owner. Replies one 1 (renewed) or 0 (not held) per
    /// name. Fair locks and write locks (owner `:write`) renew with it too.
    pub fn renew_batch(&self, lease_ms: i64, holds: &[(&[u8], &[u8])]) -> Cmd {
        let mut cmd = redis::cmd("EVALSHA");
        cmd.arg(self.renew_batch.get_hash()).arg(holds.len());
        for (name, _) in holds {
            cmd.arg(*name);
        }
        cmd.arg(lease_ms);
        for (_, owner) in holds {
            cmd.arg(*owner);
        }
        cmd
    }

    /// Replies nil when not held, 0 when one level was released, 1 when
    /// fully released.
    pub fn release(&self, name: &[u8], owner: &[u8], lease_ms: i64) -> Cmd {
        let lease = lease_ms.to_string().into_bytes();
        evalsha(&self.release, &[name, &release_channel(name)], &[UNLOCK_MESSAGE, &lease, owner])
    }

    /// Redisson 3.24+'s unlock with the unlock latch of `request_id`: the
    /// reply recorded for that id if any; else like [`Self::release`], and a
    /// 0 or 1 reply is recorded for `latch_ms`. Publishes with PUBLISH.
    pub fn release_latched(&self, name: &[u8], owner: &[u8], lease_ms: i64, request_id: &[u8], latch_ms: i64) -> Cmd {
        let (lease, latch) = (lease_ms.to_string().into_bytes(), latch_ms.to_string().into_bytes());
        let keys: [&[u8]; 3] = [name, &release_channel(name), &unlock_latch_key(name, request_id)];
        evalsha(&self.release_latched, &keys, &[UNLOCK_MESSAGE, &lease, owner, b"publish", &latch])
    }

    /// Replies 1 when a key was deleted, else 0.
    pub fn force_release(&self, name: &[u8]) -> Cmd {
        evalsha(&self.force_release, &[name, &release_channel(name)], &[UNLOCK_MESSAGE])
    }
}

fn load_all(con: &mut dyn ConnectionLike, scripts: &[&Script]) -> RedisResult<()> {
    for script in scripts {
        script.prepare_invoke().load(con)?;
    }
    Ok(())
}

fn text(n: i64) -> Vec<u8> {
    n.to_string().into_bytes()
}

fn evalsha(script: &Script, keys: &[&[u8]], args: &[&[u8]]) -> Cmd {
    let mut cmd = redis::cmd("EVALSHA");
    cmd.arg(script.get_hash()).arg(keys.len()).arg(keys).arg(args);
    cmd
}
