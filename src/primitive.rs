//! One descriptor per primitive: what the module's shared parts need of
//! it. `RLOCK.INSPECT` and `RLOCK.LIST` ask its inspector, the Redisson
//! filter looks up its scripts, `INFO` shows its counters, the hand-off
//! tells its blocked callers of freed locks and flushes, and a moved
//! lock-delay end reaches its hook. Each primitive declares its own in
//! `src/<primitive>/primitive.rs`; [`ORDER`] lists them all, in the order
//! they are asked. Its commands register themselves (`commands::registry`).

use crate::inspect::Inspect;
use crate::redisson::scripts::Family;
use std::sync::OnceLock;

pub struct Primitive {
    /// Its folder's name, as [`ORDER`] lists it.
    pub name: &'static str,
    /// Describes its keys for `RLOCK.INSPECT`; `None` when another kind's
    /// inspector describes them (a latch's count is a semaphore's counter).
    pub inspect: Option<Inspect>,
    /// Redisson's scripts that run as its commands.
    pub scripts: Option<&'static Family>,
    /// What its Redis side adds (left out of unit-test builds, as the glue
    /// is).
    #[cfg(not(test))]
    pub glue: glue::Glue,
}

#[cfg(not(test))]
pub mod glue {
    use super::all;
    use crate::handoff::WaiterKind;
    use crate::stats::KindStats;

    /// A primitive's Redis side, as the module's shared glue needs it.
    pub struct Glue {
        /// Its `INFO` counters (`rlock_<kind>_<counter>`).
        pub stats: Option<&'static KindStats>,
        /// Its callers blocked on the server, beside RLock's own hand-off.
        pub waiters: Option<&'static WaiterKind>,
        /// What looks again when the lock-delay's end moves (a promotion,
        /// a `CONFIG SET rlock.lock-delay-ms`).
        pub delay_moved: Option<fn(&redis_module::Context)>,
    }

    impl Glue {
        /// Nothing: what a descriptor's glue leaves unnamed.
        pub const NONE: Glue = Glue { stats: None, waiters: None, delay_moved: None };
    }

    /// The kinds whose callers block on the server beside RLock's.
    pub fn waiter_kinds() -> impl Iterator<Item = &'static WaiterKind> {
        all().filter_map(|primitive| primitive.glue.waiters)
    }
}

#[linkme::distributed_slice]
pub static PRIMITIVES: [Primitive];

/// Every primitive, in the order they are asked: a kind whose keys look
/// like another's comes before it (a fair lock's hash is a lock's too,
/// and a read-write lock's or a permit semaphore's may be taken for one),
/// so that the most specific inspector describes a key.
pub const ORDER: &[&str] = &[
    "permit_semaphore",
    "rwlock",
    "fair",
    "fenced",
    "lock",
    "semaphore",
    "countdown",
    "fast_multi",
    #[cfg(test)]
    "echo",
];

/// Every primitive, in [`ORDER`] (one not listed last: a test's).
pub fn all() -> impl Iterator<Item = &'static Primitive> {
    static SORTED: OnceLock<Vec<&'static Primitive>> = OnceLock::new();
    let place = |primitive: &Primitive| ORDER.iter().position(|name| *name == primitive.name).unwrap_or(ORDER.len());
    let sorted = SORTED.get_or_init(|| {
        let mut sorted: Vec<&Primitive> = PRIMITIVES.iter().collect();
        sorted.sort_by_key(|primitive| place(primitive));
        sorted
    });
    sorted.iter().copied()
}

/// The inspectors, in order.
pub fn inspectors() -> impl Iterator<Item = Inspect> {
    all().filter_map(|primitive| primitive.inspect)
}

/// Every primitive's Redisson scripts.
pub fn families() -> impl Iterator<Item = &'static Family> {
    all().filter_map(|primitive| primitive.scripts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_primitive_is_listed_once_and_every_listed_one_is_declared() {
        let declared: Vec<&str> = all().map(|primitive| primitive.name).collect();
        assert_eq!(declared, ORDER, "src/primitive.rs lists every primitive, in order, once");
    }
}
