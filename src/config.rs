//! Module configuration: `rlock.*` settings, readable and writable with
//! CONFIG GET/SET and settable as module arguments or in redis.conf.

use redis_module::configuration::{ConfigurationContext, ConfigurationValue};
use redis_module::RedisError;
use rlock_protocol::DEFAULT_LEASE_MS as DEFAULT;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

/// `rlock.default-lease-ms`: the lease when a command gives none.
pub static DEFAULT_LEASE_MS: AtomicI64 = AtomicI64::new(DEFAULT);

pub fn default_lease_ms() -> i64 {
    DEFAULT_LEASE_MS.load(Ordering::Relaxed)
}

/// `rlock.fencing-token-jump`: whether fenced tokens start each primary
/// term at its floor (see `term`), so that they survive failover.
pub static FENCING_TOKEN_JUMP: AtomicBool = AtomicBool::new(true);

pub fn fencing_token_jump() -> bool {
    FENCING_TOKEN_JUMP.load(Ordering::Relaxed)
}

/// `rlock.deadlock-detection`: whether a caller about to block on the
/// server is told `DEADLOCK` when its wait would close a cycle.
pub static DEADLOCK_DETECTION: AtomicBool = AtomicBool::new(true);

pub fn deadlock_detection() -> bool {
    DEADLOCK_DETECTION.load(Ordering::Relaxed)
}

/// `rlock.lock-delay-ms`: how long a term's start admits no new holder
/// (see `term`); 0 turns lock-delay off.
pub static LOCK_DELAY_MS: AtomicI64 = AtomicI64::new(0);

pub fn lock_delay_ms() -> i64 {
    LOCK_DELAY_MS.load(Ordering::Relaxed)
}

/// `rlock.stall-ms`: an event-loop stall at least this long restarts the
/// lock-delay (see `term`); 0 never does.
pub static STALL_MS: AtomicI64 = AtomicI64::new(1_000);

pub fn stall_ms() -> i64 {
    STALL_MS.load(Ordering::Relaxed)
}

redis_module::enum_configuration! {
    /// `rlock.redisson-scripts`: whether Redisson's lock scripts run as
    /// the native commands (see `redisson`).
    #[allow(non_camel_case_types)]
    #[derive(Debug, PartialEq, Eq)]
    pub enum RedissonScripts {
        off = 0,
        native = 1,
    }
}

/// The `rlock.redisson-scripts` setting, read on every command by the
/// filter: a relaxed atomic, not a lock.
pub struct RedissonSetting(AtomicBool);

pub static REDISSON_SCRIPTS: RedissonSetting = RedissonSetting(AtomicBool::new(false));

pub fn redisson_native() -> bool {
    REDISSON_SCRIPTS.0.load(Ordering::Relaxed)
}

impl ConfigurationValue<RedissonScripts> for RedissonSetting {
    fn get(&self, _ctx: &ConfigurationContext) -> RedissonScripts {
        if redisson_native() {
            RedissonScripts::native
        } else {
            RedissonScripts::off
        }
    }

    fn set(&self, _ctx: &ConfigurationContext, value: RedissonScripts) -> Result<(), RedisError> {
        self.0.store(value == RedissonScripts::native, Ordering::Relaxed);
        Ok(())
    }
}
