//! Settling a lost acquire reply, and the release latch fallback, as a
//! hostile user would break them, against a real redis-server.

#[macro_use]
mod common;

use common::{admin, stall, stallable_server};
use rlock_client::{Client, ClientOptions, Error, ReplicaSync};
use std::time::Duration;
use testkit::Server;

/// An acquire whose `[RLOCK.ACQUIRE, WAIT]` reply timed out is settled by
/// reading the hold count; the WAIT's answer is never looked at, so a lock
/// no replica acknowledged is handed out as a guard (README: "When fewer
/// replicas acknowledge, the client releases the lock again and returns
/// Error::ReplicaSync").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settled_acquire_still_needs_the_replicas() {
    let primary = Server::builder().config("enable-debug-command", "yes").start();
    let replica = Server::start();
    replica.replicate(&primary);
    let sync = ReplicaSync::Replicas { count: 1, timeout: Duration::from_millis(200) };
    let client = Client::connect(primary.client(), ClientOptions::default().with_replica_sync(sync)).await.unwrap();
    let lock = client.lock("review2:synced");
    // Opens the replica sync connection.
    lock.lock().await.unwrap().unlock().await.unwrap();

    // The replica cannot acknowledge; the primary stalls longer than the
    // sync connection's response timeout (WAIT timeout + 1 s).
    replica.pause();
    let stalled = stall(&primary, 1.6).await;
    let acquired = lock.lock().await;
    stalled.await.unwrap();
    let held = lock.hold_count().await.unwrap();
    replica.resume();
    assert!(acquired.is_err(), "no replica acknowledged, yet lock() returned {acquired:?} (server hold count {held})");
}

fn acl_user_url(server: &Server, user: &str) -> String {
    let mut con = server.connection();
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg(user)
        .arg("on")
        .arg(">pw")
        .arg("~*")
        .arg("&*")
        .arg("+@all")
        .query(&mut con)
        .unwrap();
    format!("redis://{user}:pw@127.0.0.1:{}/", server.port())
}

/// A release during a stall longer than one response timeout: retried with
/// its latch, it succeeds once the server answers.
async fn unlock_through_a_stall(server: &Server, client: &Client, name: &str) -> rlock_client::Result<()> {
    let guard = client.lock(name).lock().await.unwrap();
    let stalled = stall(server, 0.8).await;
    let unlocked = guard.unlock().await;
    stalled.await.unwrap();
    unlocked
}

/// Control: with the latch, a release survives a 0.8 s stall.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_a_latched_release_survives_a_stall() {
    let server = stallable_server();
    let client = Client::open(&acl_user_url(&server, "worker")).await.unwrap();
    unlock_through_a_stall(&server, &client, "review2:ok").await.unwrap();
}

/// A NOPERM about the lock key itself (an ACL narrowed while a lock is
/// held) is taken for a refused latch key: the client stops sending
/// latches for every lock, and later releases are no longer retryable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_noperm_on_the_lock_key_does_not_disable_latches() {
    let server = stallable_server();
    let client = Client::open(&acl_user_url(&server, "worker")).await.unwrap();
    let forbidden = client.lock("forbidden:1").lock().await.unwrap();
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("worker")
        .arg("resetkeys")
        .arg("~review2:*")
        .arg("~redisson_unlock_latch:*")
        .query_async(&mut admin(&server).await)
        .await
        .unwrap();
    let refused = forbidden.unlock().await;
    assert!(matches!(&refused, Err(Error::Redis(err)) if err.code() == Some("NOPERM")), "{refused:?}");

    let unlocked = unlock_through_a_stall(&server, &client, "review2:ok").await;
    assert!(unlocked.is_ok(), "after an unrelated NOPERM, a release during a stall failed: {unlocked:?}");
}
