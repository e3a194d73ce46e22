//! The fair lock's descriptor: what the module's shared parts need of it (see
//! `crate::primitive`).

use crate::primitive::{Primitive, PRIMITIVES};

#[linkme::distributed_slice(PRIMITIVES)]
static FAIR: Primitive = Primitive {
    name: "fair",
    inspect: Some(super::inspect::inspect),
    scripts: Some(&super::redisson::FAIR),
    #[cfg(not(test))]
    glue: crate::primitive::glue::Glue {
        stats: Some(&super::commands::STATS),
        waiters: Some(&super::handoff::FAIR_WAITERS),
        ..crate::primitive::glue::Glue::NONE
    },
};
