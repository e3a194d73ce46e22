//! The read-write lock's descriptor: what the module's shared parts need of it (see
//! `crate::primitive`).

use crate::primitive::{Primitive, PRIMITIVES};

#[linkme::distributed_slice(PRIMITIVES)]
static RWLOCK: Primitive = Primitive {
    name: "rwlock",
    inspect: Some(super::inspect::inspect),
    scripts: Some(&super::redisson::RWLOCK),
    #[cfg(not(test))]
    glue: crate::primitive::glue::Glue {
        stats: Some(&super::commands::STATS),
        waiters: Some(&super::handoff::READ_WRITE_WAITERS),
        ..crate::primitive::glue::Glue::NONE
    },
};
