//! Redisson's synchronizers: the semaphore, the permit-expirable
//! semaphore and the count-down latch.

pub(crate) mod latch;
pub(crate) mod permits;
pub(crate) mod semaphore;
