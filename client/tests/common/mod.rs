//! Helpers shared by the client test files (each uses some of them).
#![allow(dead_code, unused_macros)]

use std::time::Duration;
use testkit::Server;

/// How long a test waits for something that should happen promptly.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// Polls an async condition until it holds, failing after [`PATIENCE`]
/// (or the given patience).
macro_rules! eventually {
    ($what:expr, $check:expr) => {
        eventually!($what, $crate::common::PATIENCE, $check)
    };
    ($what:expr, $patience:expr, $check:expr) => {{
        let deadline = std::time::Instant::now() + $patience;
        while !$check {
            assert!(std::time::Instant::now() < deadline, "timed out waiting for {}", $what);
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }};
}

/// A plain connection for looking at (or meddling with) the server.
pub async fn admin(server: &Server) -> redis::aio::MultiplexedConnection {
    server.client().get_multiplexed_async_connection().await.unwrap()
}

/// Subscribers of `channel` on the server.
pub async fn numsub(server: &Server, channel: &[u8]) -> i64 {
    let (_, count): (Vec<u8>, i64) =
        redis::cmd("PUBSUB").arg("NUMSUB").arg(channel).query_async(&mut admin(server).await).await.unwrap();
    count
}
