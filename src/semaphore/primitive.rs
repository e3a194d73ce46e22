//! The semaphore's descriptor: what the module's shared parts need of it (see
//! `crate::primitive`).

use crate::primitive::{Primitive, PRIMITIVES};

#[linkme::distributed_slice(PRIMITIVES)]
static SEMAPHORE: Primitive = Primitive {
    name: "semaphore",
    inspect: Some(super::inspect::inspect),
    scripts: Some(&super::redisson::SEMAPHORE),
    #[cfg(not(test))]
    stats: Some(&super::commands::STATS),
    #[cfg(not(test))]
    waiters: None,
    #[cfg(not(test))]
    delay_moved: Some(super::delay_wake::delay_moved),
};
