//! The permit-expirable semaphore's descriptor: what the module's shared parts need of it (see
//! `crate::primitive`).

use crate::primitive::{Primitive, PRIMITIVES};

#[linkme::distributed_slice(PRIMITIVES)]
static PERMIT_SEMAPHORE: Primitive = Primitive {
    name: "permit_semaphore",
    inspect: Some(super::inspect::inspect),
    scripts: Some(&super::redisson::PERMIT_SEMAPHORE),
    #[cfg(not(test))]
    stats: Some(&super::commands::STATS),
    #[cfg(not(test))]
    waiters: None,
    #[cfg(not(test))]
    delay_moved: None,
};
