//! The permit-expirable semaphore's descriptor: what the module's shared parts need of it (see
//! `crate::primitive`).

use crate::primitive::{Primitive, PRIMITIVES};

#[linkme::distributed_slice(PRIMITIVES)]
static PERMIT_SEMAPHORE: Primitive = Primitive {
    name: "permit_semaphore",
    inspect: Some(super::inspect::inspect),
    scripts: Some(&super::redisson::PERMIT_SEMAPHORE),
    #[cfg(not(test))]
    glue: crate::primitive::glue::Glue { stats: Some(&super::commands::STATS), ..crate::primitive::glue::Glue::NONE },
};
