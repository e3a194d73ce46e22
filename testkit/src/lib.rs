//! Test and benchmark support for rlock. Not published.

mod cluster;
mod events;
mod family_scripts;
mod rng;
mod scripts;
mod server;
mod tracking;

pub use cluster::Cluster;
pub use events::keyspace_events;
pub use family_scripts::{FairScripts, RwScripts};
pub use rng::Rng;
pub use scripts::{release_channel, unlock_latch_key, RedissonScripts, UNLOCK_MESSAGE};
pub use server::{module_path, send_signal, Server, ServerBuilder};
pub use tracking::{invalidated, Tracker};

/// A server error as "CODE detail", the way redis-cli prints it, or a
/// panic when the result is not an error.
pub fn error_text<T: std::fmt::Debug>(result: redis::RedisResult<T>) -> String {
    match result {
        Ok(value) => panic!("expected an error reply, got {value:?}"),
        Err(err) => match (err.code(), err.detail()) {
            (Some(code), Some(detail)) => format!("{code} {detail}"),
            (Some(code), None) => code.to_owned(),
            _ => err.to_string(),
        },
    }
}

/// Polls `check` until it holds, failing the test after `timeout`.
pub fn eventually(what: &str, timeout: std::time::Duration, mut check: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + timeout;
    while !check() {
        assert!(std::time::Instant::now() < deadline, "timed out after {timeout:?} waiting for {what}");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}
