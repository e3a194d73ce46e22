//! Module configuration: `rlock.*` settings, readable and writable with
//! CONFIG GET/SET and settable as module arguments or in redis.conf.

use rlock_protocol::DEFAULT_LEASE_MS as DEFAULT;
use std::sync::atomic::{AtomicI64, Ordering};

/// `rlock.default-lease-ms`: the lease when a command gives none.
pub static DEFAULT_LEASE_MS: AtomicI64 = AtomicI64::new(DEFAULT);

pub fn default_lease_ms() -> i64 {
    DEFAULT_LEASE_MS.load(Ordering::Relaxed)
}
