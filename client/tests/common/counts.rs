//! The set-up of the tests of hold counts (`holds`, `shared_counts`): a
//! client with a short watchdog, and the owner's count on the server.

use super::admin;
use rlock_client::{Client, ClientOptions, ReplicaSync};
use std::time::Duration;
use testkit::Server;

/// A round every 667 ms: 1.3 s of slack before a lease ends, for a loaded
/// machine that runs a round late (600 ms left 400 ms, which was too little).
pub const WATCHDOG: Duration = Duration::from_secs(2);

pub fn options() -> ClientOptions {
    ClientOptions::default().with_watchdog_timeout(WATCHDOG).with_replica_sync(ReplicaSync::Off)
}

pub async fn client(server: &Server) -> Client {
    Client::connect(server.client(), options()).await.expect("client")
}

/// The levels `owner` holds of the lock `name`, as the server counts them.
pub async fn hold_count(server: &Server, name: &str, owner: &[u8]) -> i64 {
    let count: Option<i64> =
        redis::cmd("HGET").arg(name).arg(owner).query_async(&mut admin(server).await).await.unwrap();
    count.unwrap_or(0)
}
