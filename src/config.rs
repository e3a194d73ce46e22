//! Module configuration: `rlock.*` settings, readable and writable with
//! CONFIG GET/SET and settable as module arguments or in redis.conf.

use std::sync::atomic::{AtomicI64, Ordering};

/// Redisson's `lockWatchdogTimeout`, the default `rlock.default-lease-ms`.
pub const DEFAULT_LEASE_MS_VALUE: i64 = 30_000;

/// `rlock.default-lease-ms`: the lease when a command gives none.
pub static DEFAULT_LEASE_MS: AtomicI64 = AtomicI64::new(DEFAULT_LEASE_MS_VALUE);

pub fn default_lease_ms() -> i64 {
    DEFAULT_LEASE_MS.load(Ordering::Relaxed)
}
