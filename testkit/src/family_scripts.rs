//! Redisson's fair-lock and read-write-lock scripts as Lua (ours, written
//! from `shared/docs/redisson-family-protocol.md` §2 and §3): the
//! reference the RFAIR and RRW commands are checked against, and the
//! "Java service" of interop tests. `now` is passed in, as Redisson does;
//! tests pass the server's clock. Publishing uses PUBLISH.

use redis::{Cmd, ConnectionLike, RedisResult, Script};
use rlock_protocol::{
    fair_queue_key, fair_timeout_key, release_channel, rwlock_channel, rwlock_key_prefix, rwlock_timeout_key,
    rwlock_write_field, unlock_latch_key,
};

fn with_purge(source: &str) -> Script {
    Script::new(&source.replace("--PURGE--", include_str!("../scripts/fair/purge.lua")))
}

fn evalsha(script: &Script, keys: &[&[u8]], args: &[&[u8]]) -> Cmd {
    let mut cmd = redis::cmd("EVALSHA");
    cmd.arg(script.get_hash()).arg(keys.len()).arg(keys).arg(args);
    cmd
}

fn text(n: i64) -> Vec<u8> {
    n.to_string().into_bytes()
}

/// Redisson's fair lock scripts.
pub struct FairScripts {
    acquire: Script,
    cancel: Script,
    release: Script,
    force_release: Script,
}

impl Default for FairScripts {
    fn default() -> Self {
        Self {
            acquire: with_purge(include_str!("../scripts/fair/acquire.lua")),
            cancel: Script::new(include_str!("../scripts/fair/cancel.lua")),
            release: with_purge(include_str!("../scripts/fair/release.lua")),
            force_release: with_purge(include_str!("../scripts/fair/force_release.lua")),
        }
    }
}

impl FairScripts {
    pub fn load(&self, con: &mut dyn ConnectionLike) -> RedisResult<()> {
        for script in [&self.acquire, &self.cancel, &self.release, &self.force_release] {
            script.prepare_invoke().load(con)?;
        }
        Ok(())
    }

    /// tryLock: `wait_ms` Some for the waiting form (queues; replies a
    /// hint), None for the no-wait form (replies 1; `DEFAULT_WAIT_MS`
    /// shifts the deadlines as Redisson's default).
    pub fn acquire(&self, name: &[u8], owner: &[u8], lease_ms: i64, wait_ms: Option<i64>, now_ms: i64) -> Cmd {
        let form: &[u8] = if wait_ms.is_some() { b"wait" } else { b"nowait" };
        let wait = text(wait_ms.unwrap_or(300_000));
        let keys: [&[u8]; 3] = [name, &fair_queue_key(name), &fair_timeout_key(name)];
        evalsha(&self.acquire, &keys, &[&text(lease_ms), owner, &wait, &text(now_ms), form])
    }

    pub fn cancel(&self, name: &[u8], owner: &[u8], wait_ms: i64) -> Cmd {
        evalsha(&self.cancel, &[&fair_queue_key(name), &fair_timeout_key(name)], &[owner, &text(wait_ms)])
    }

    pub fn release(&self, name: &[u8], owner: &[u8], lease_ms: i64, request_id: &[u8], now_ms: i64) -> Cmd {
        let keys: [&[u8]; 5] = [
            name,
            &fair_queue_key(name),
            &fair_timeout_key(name),
            &release_channel(name),
            &unlock_latch_key(name, request_id),
        ];
        evalsha(&self.release, &keys, &[b"0", &text(lease_ms), owner, &text(now_ms), b"publish", b"20000"])
    }

    pub fn force_release(&self, name: &[u8], now_ms: i64) -> Cmd {
        let keys: [&[u8]; 4] = [name, &fair_queue_key(name), &fair_timeout_key(name), &release_channel(name)];
        evalsha(&self.force_release, &keys, &[b"0", &text(now_ms), b"publish"])
    }
}

/// Redisson's read-write lock scripts; owners are base owners (the write
/// side's `:write` is appended here, as Redisson does).
pub struct RwScripts {
    read_acquire: Script,
    read_release: Script,
    write_acquire: Script,
    write_release: Script,
    force_release: Script,
}

impl Default for RwScripts {
    fn default() -> Self {
        Self {
            read_acquire: Script::new(include_str!("../scripts/rwlock/read_acquire.lua")),
            read_release: Script::new(include_str!("../scripts/rwlock/read_release.lua")),
            write_acquire: Script::new(include_str!("../scripts/rwlock/write_acquire.lua")),
            write_release: Script::new(include_str!("../scripts/rwlock/write_release.lua")),
            force_release: Script::new(include_str!("../scripts/rwlock/force_release.lua")),
        }
    }
}

impl RwScripts {
    pub fn load(&self, con: &mut dyn ConnectionLike) -> RedisResult<()> {
        for script in
            [&self.read_acquire, &self.read_release, &self.write_acquire, &self.write_release, &self.force_release]
        {
            script.prepare_invoke().load(con)?;
        }
        Ok(())
    }

    /// The read hold timeout prefix: `{name}:owner:rwlock_timeout`.
    fn timeout_prefix(name: &[u8], owner: &[u8]) -> Vec<u8> {
        let key = rwlock_timeout_key(name, owner, 1);
        key[..key.len() - 2].to_vec()
    }

    pub fn read_acquire(&self, name: &[u8], owner: &[u8], lease_ms: i64) -> Cmd {
        let keys: [&[u8]; 2] = [name, &Self::timeout_prefix(name, owner)];
        evalsha(&self.read_acquire, &keys, &[&text(lease_ms), owner, &rwlock_write_field(owner)])
    }

    pub fn read_release(&self, name: &[u8], owner: &[u8], request_id: &[u8]) -> Cmd {
        let keys: [&[u8]; 5] = [
            name,
            &rwlock_channel(name),
            &Self::timeout_prefix(name, owner),
            &rwlock_key_prefix(name),
            &unlock_latch_key(name, request_id),
        ];
        evalsha(&self.read_release, &keys, &[b"0", owner, b"publish", b"20000"])
    }

    pub fn write_acquire(&self, name: &[u8], owner: &[u8], lease_ms: i64) -> Cmd {
        evalsha(&self.write_acquire, &[name], &[&text(lease_ms), &rwlock_write_field(owner)])
    }

    pub fn write_release(&self, name: &[u8], owner: &[u8], lease_ms: i64, request_id: &[u8]) -> Cmd {
        let keys: [&[u8]; 3] = [name, &rwlock_channel(name), &unlock_latch_key(name, request_id)];
        evalsha(&self.write_release, &keys, &[b"1", &text(lease_ms), &rwlock_write_field(owner), b"publish", b"20000"])
    }

    /// `write`: the write side's force unlock, else the read side's.
    pub fn force_release(&self, name: &[u8], write: bool) -> Cmd {
        let (message, mode): (&[u8], &[u8]) = if write { (b"1", b"write") } else { (b"0", b"read") };
        evalsha(&self.force_release, &[name, &rwlock_channel(name)], &[message, b"publish", mode])
    }
}
