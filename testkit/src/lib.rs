//! Test and benchmark support for rlock. Not published.

mod rng;
mod scripts;
mod server;

pub use rng::Rng;
pub use scripts::{release_channel, RedissonScripts, UNLOCK_MESSAGE};
pub use server::{module_path, Server, ServerBuilder};

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
