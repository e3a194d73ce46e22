//! Replica sync: acquires WAIT for replicas, and roll back when they do
//! not acknowledge in time.

use redis::AsyncCommands;
use rlock_client::{Client, ClientOptions, Error, ReplicaSync};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use testkit::Server;

fn primary_and_replica() -> (Server, Server) {
    let primary = Server::start();
    let replica = Server::start();
    replica.replicate(&primary);
    (primary, replica)
}

async fn client(server: &Server, sync: ReplicaSync) -> Client {
    Client::connect(server.client(), ClientOptions::default().with_replica_sync(sync)).await.expect("client")
}

async fn fields(server: &Server, key: &str) -> HashMap<String, i64> {
    let mut con = server.client().get_multiplexed_async_connection().await.unwrap();
    con.hgetall(key).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_synced_lock_survives_promotion_of_the_replica() {
    let (primary, replica) = primary_and_replica();
    let client = client(&primary, ReplicaSync::default()).await;
    let lock = client.lock("promoted");

    // The replica stalls for 300 ms: the acquire must wait for it.
    replica.pause();
    let started = Instant::now();
    let (guard, ()) = tokio::join!(lock.lock(), async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        replica.resume();
    });
    let guard = guard.expect("acquired with the replica's acknowledgement");
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(300), "returned before the stalled replica acknowledged: {waited:?}");

    let mut promote = replica.client().get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("REPLICAOF").arg("NO").arg("ONE").query_async(&mut promote).await.unwrap();
    assert_eq!(
        fields(&replica, "promoted").await,
        HashMap::from([(String::from_utf8_lossy(lock.owner()).into_owned(), 1)])
    );
    let other = Client::connect(replica.client(), ClientOptions::default()).await.unwrap();
    assert!(
        other.lock("promoted").try_lock(Duration::ZERO, None).await.unwrap().is_none(),
        "still held on the new primary"
    );
    drop(guard);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unacknowledged_acquire_is_rolled_back() {
    let (primary, replica) = primary_and_replica();
    let sync = ReplicaSync::AllReplicas { timeout: Duration::from_millis(300) };
    let client = client(&primary, sync).await;
    let lock = client.lock("unacknowledged");

    replica.pause();
    let result = lock.lock().await;
    replica.resume();
    match result {
        Err(Error::ReplicaSync { acknowledged: 0, required: 1 }) => {}
        other => panic!("expected a replica sync error, got {other:?}"),
    }
    assert!(fields(&primary, "unacknowledged").await.is_empty(), "the acquire was rolled back");
    assert!(!lock.is_locked().await.unwrap());
    // Once the resumed replica has caught up (it may take longer than the
    // sync's 300 ms on a loaded machine), a retry succeeds: the caller
    // retries as long as a loaded replica acknowledges later than 300 ms.
    let mut con = primary.client().get_multiplexed_async_connection().await.unwrap();
    let caught_up: i64 = redis::cmd("WAIT").arg(1).arg(10_000).query_async(&mut con).await.unwrap();
    assert_eq!(caught_up, 1, "the resumed replica did not catch up within 10 s");
    let guard = testkit::until_ok(testkit::PATIENCE, async || match lock.lock().await {
        Err(Error::ReplicaSync { .. }) => {
            assert!(!lock.is_locked().await.unwrap(), "a refused retry was rolled back");
            Err("a retry's sync timed out")
        }
        granted => Ok(granted.expect("the caller may retry")),
    })
    .await
    .expect("a retry succeeds once the replica keeps up");
    guard.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_can_be_switched_off() {
    let (primary, replica) = primary_and_replica();
    let client = client(&primary, ReplicaSync::Off).await;
    replica.pause();
    let result = tokio::time::timeout(Duration::from_secs(5), client.lock("unsynced").lock()).await;
    replica.resume();
    result.expect("no WAIT without sync").unwrap().unlock().await.unwrap();
}
