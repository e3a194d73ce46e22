//! The read-write lock's descriptor: what the module's shared parts need of it (see
//! `crate::primitive`).

use crate::primitive::{Primitive, PRIMITIVES};

#[linkme::distributed_slice(PRIMITIVES)]
static RWLOCK: Primitive = Primitive {
    name: "rwlock",
    inspect: Some(super::inspect::inspect),
    scripts: Some(&super::redisson::RWLOCK),
    #[cfg(not(test))]
    stats: Some(&super::commands::STATS),
    #[cfg(not(test))]
    waiters: Some(&super::handoff::READ_WRITE_WAITERS),
    #[cfg(not(test))]
    delay_moved: None,
};
