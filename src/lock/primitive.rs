//! RLock's descriptor: what the module's shared parts need of it (see
//! `crate::primitive`).

use crate::primitive::{Primitive, PRIMITIVES};

#[linkme::distributed_slice(PRIMITIVES)]
static LOCK: Primitive = Primitive {
    name: "lock",
    inspect: Some(super::inspect::inspect),
    scripts: Some(&super::redisson::LOCK),
    #[cfg(not(test))]
    stats: Some(&super::commands::STATS),
    #[cfg(not(test))]
    waiters: None,
    #[cfg(not(test))]
    delay_moved: Some(crate::handoff::events::recheck_every_lock),
};
