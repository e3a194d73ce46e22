//! The fast multi-lock's descriptor (its locks are RLock's): what the module's shared parts need of it (see
//! `crate::primitive`).

use crate::primitive::{Primitive, PRIMITIVES};

#[linkme::distributed_slice(PRIMITIVES)]
static FAST_MULTI: Primitive = Primitive {
    name: "fast_multi",
    inspect: None,
    scripts: Some(&super::redisson::FAST_MULTI),
    #[cfg(not(test))]
    glue: crate::primitive::glue::Glue::NONE,
};
