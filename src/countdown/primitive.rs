//! The count-down latch's descriptor (`RLOCK.INSPECT` describes its count as a
//! semaphore's counter): what the module's shared parts need of it (see
//! `crate::primitive`).

use crate::primitive::{Primitive, PRIMITIVES};

#[linkme::distributed_slice(PRIMITIVES)]
static COUNTDOWN: Primitive = Primitive {
    name: "countdown",
    inspect: None,
    scripts: Some(&super::redisson::LATCH),
    #[cfg(not(test))]
    glue: crate::primitive::glue::Glue::NONE,
};
