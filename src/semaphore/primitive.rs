//! The semaphore's descriptor: what the module's shared parts need of it (see
//! `crate::primitive`).

use crate::primitive::{Primitive, PRIMITIVES};

#[linkme::distributed_slice(PRIMITIVES)]
static SEMAPHORE: Primitive = Primitive {
    name: "semaphore",
    inspect: Some(super::inspect::inspect),
    scripts: Some(&super::redisson::SEMAPHORE),
    #[cfg(not(test))]
    glue: crate::primitive::glue::Glue {
        stats: Some(&super::commands::STATS),
        delay_moved: Some(super::delay_wake::delay_moved),
        ..crate::primitive::glue::Glue::NONE
    },
};
