//! The fair lock's descriptor: what the module's shared parts need of it (see
//! `crate::primitive`).

use crate::primitive::{Primitive, PRIMITIVES};

#[linkme::distributed_slice(PRIMITIVES)]
static FAIR: Primitive = Primitive {
    name: "fair",
    inspect: Some(super::inspect::inspect),
    scripts: Some(&super::redisson::FAIR),
    #[cfg(not(test))]
    stats: Some(&super::commands::STATS),
    #[cfg(not(test))]
    waiters: Some(&super::handoff::FAIR_WAITERS),
    #[cfg(not(test))]
    delay_moved: None,
};
