//! The fenced lock's descriptor: what the module's shared parts need of it (see
//! `crate::primitive`).

use crate::primitive::{Primitive, PRIMITIVES};

#[linkme::distributed_slice(PRIMITIVES)]
static FENCED: Primitive = Primitive {
    name: "fenced",
    inspect: Some(super::inspect::inspect),
    scripts: Some(&super::redisson::FENCED),
    #[cfg(not(test))]
    glue: crate::primitive::glue::Glue { stats: Some(&super::commands::STATS), ..crate::primitive::glue::Glue::NONE },
};
