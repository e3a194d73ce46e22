//! Server faults: crashes under AOF, and a restart without the module.

use rlock_client::{Client, ClientOptions, Error, Guard, Lock};
use std::time::{Duration, Instant};
use testkit::{eventually, Server};

const WATCHDOG: Duration = Duration::from_secs(2);

async fn client(server: &Server) -> Client {
    let options = ClientOptions::default().with_watchdog_timeout(WATCHDOG);
    Client::connect(server.client(), options).await.expect("client")
}

/// Waits until the watchdog has completed `rounds` more successful rounds.
async fn renewed(client: &Client, rounds: u64) {
    let stats = client.watchdog_stats();
    let target = stats.rounds - stats.failed_rounds + rounds;
    eventually!(format!("watchdog progress: {:?}", client.watchdog_stats()), Duration::from_secs(20), {
        let now = client.watchdog_stats();
        now.rounds - now.failed_rounds >= target
    });
}

/// A lock held across a SIGKILL and restart of the server.
async fn crash_while_held(fsync: &str) -> (Server, Client, Lock, Guard) {
    let mut server = Server::builder().config("appendonly", "yes").config("appendfsync", fsync).start();
    let client = client(&server).await;
    let lock = client.lock("crash");
    let guard = lock.lock().await.unwrap();
    renewed(&client, 1).await;
    server.restart();
    renewed(&client, 2).await;
    (server, client, lock, guard)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_appendfsync_always_a_held_lock_survives_a_crash_and_the_watchdog_resumes() {
    let (_server, _client, lock, guard) = crash_while_held("always").await;
    assert!(!guard.is_lost(), "the lock came back from the AOF");
    assert!(lock.is_held().await.unwrap(), "the client reconnected and holds the lock");
    let lease = lock.remaining_lease().await.unwrap().unwrap();
    assert!(lease <= WATCHDOG, "lease {lease:?}");
    guard.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_appendfsync_everysec_the_watchdog_resumes_or_reports_the_loss() {
    let (_server, _client, lock, guard) = crash_while_held("everysec").await;
    let held = lock.is_held().await.unwrap();
    assert_eq!(guard.is_lost(), !held, "the watchdog must never keep a lock it no longer holds");
    if held {
        guard.unlock().await.unwrap();
    } else {
        assert!(matches!(guard.unlock().await, Err(Error::NotOwner)));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_the_crash_lost_is_reported_lost() {
    // No AOF: the restart loses everything, and the watchdog must say so.
    let mut server = Server::start();
    let client = client(&server).await;
    let guard = client.lock("forgotten").lock().await.unwrap();
    server.restart();
    tokio::time::timeout(Duration::from_secs(20), guard.lost()).await.expect("reported lost");
    assert!(matches!(guard.unlock().await, Err(Error::NotOwner)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restarted_without_the_module_gives_the_module_error() {
    let mut server = Server::start();
    let client = client(&server).await;
    let lock = client.lock("x");
    lock.lock().await.unwrap().unlock().await.unwrap();
    server.restart_without_module();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match lock.lock().await {
            Err(Error::ModuleNotLoaded) => break,
            // Reconnecting: connection errors until the server is back.
            Err(err) if err.is_transient() && Instant::now() < deadline => {}
            other => panic!("expected ModuleNotLoaded, got {other:?}"),
        }
    }
}
