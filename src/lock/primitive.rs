//! RLock's descriptor: what the module's shared parts need of it (see
//! `crate::primitive`).

use crate::primitive::{Primitive, PRIMITIVES};

#[linkme::distributed_slice(PRIMITIVES)]
static LOCK: Primitive = Primitive {
    name: "lock",
    inspect: Some(super::inspect::inspect),
    scripts: Some(&super::redisson::LOCK),
    #[cfg(not(test))]
    glue: crate::primitive::glue::Glue {
        stats: Some(&super::commands::STATS),
        delay_moved: Some(crate::handoff::events::recheck_every_lock),
        ..crate::primitive::glue::Glue::NONE
    },
};
