//! The fair lock (RFAIR.*) through rlock-client, against a real
//! redis-server with the module.

mod common;

use common::{admin, info};
use redis::AsyncCommands;
use rlock_client::{Client, ClientOptions};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use testkit::{eventually, FairScripts, Server, PATIENCE};

const WATCHDOG: Duration = Duration::from_millis(600);

/// Longer than any test: a holder that must be released, never expire.
const LONG_LEASE: Duration = Duration::from_secs(60);

async fn client(server: &Server) -> Client {
    let options = ClientOptions::default().with_watchdog_timeout(WATCHDOG);
    Client::connect(server.client(), options).await.expect("client")
}

/// RFAIR.STATUS's `field`, of the lock or (with `owner`) of a caller.
async fn status_field(server: &Server, name: &str, owner: Option<&[u8]>, field: &str) -> i64 {
    let reply: Vec<(String, Option<i64>)> =
        redis::cmd("RFAIR.STATUS").arg(name).arg(owner).query_async(&mut admin(server).await).await.unwrap();
    reply.iter().find(|(name, _)| name == field).and_then(|(_, value)| *value).unwrap()
}

/// `(queued, position of owner)` from RFAIR.STATUS.
async fn queue(server: &Server, name: &str, owner: &[u8]) -> (i64, i64) {
    (status_field(server, name, None, "queued").await, status_field(server, name, Some(owner), "position").await)
}

async fn queue_keys_exist(server: &Server, name: &str) -> i64 {
    let keys = [format!("redisson_lock_queue:{{{name}}}"), format!("redisson_lock_timeout:{{{name}}}")];
    redis::cmd("EXISTS").arg(&keys).query_async(&mut admin(server).await).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_get_the_lock_in_arrival_order() {
    let server = Server::start();
    arrival_order(&server, client(&server).await).await;
    // The default waiting mode: queued waiters block on the server (one per
    // pooled connection, 8; the others wait by pub/sub) and are granted
    // their turns there.
    assert!(info(&server, "granted").await >= 8, "granted by the server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pubsub_waiters_get_the_lock_in_arrival_order() {
    let server = Server::start();
    let options = ClientOptions::default().with_watchdog_timeout(WATCHDOG).with_blocking_connections(0);
    arrival_order(&server, Client::connect(server.client(), options).await.expect("client")).await;
    assert_eq!(info(&server, "granted").await, 0, "woken on their channels, no server grants");
}

async fn arrival_order(server: &Server, client: Client) {
    let holder = client.fair_lock("fifo").lock().await.unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut waiters = Vec::new();
    for n in 0..16 {
        let lock = client.fair_lock("fifo");
        let owner = lock.owner().to_vec();
        let order = order.clone();
        waiters.push(tokio::spawn(async move {
            let guard = lock.lock().await.unwrap();
            order.lock().unwrap().push(n);
            guard.unlock().await.unwrap();
        }));
        // Arrival order is queue order: the next comes once this one is in.
        eventually!(format!("waiter {n} queued"), queue(server, "fifo", &owner).await == (n + 1, n + 1));
    }
    holder.unlock().await.unwrap();
    for waiter in waiters {
        tokio::time::timeout(PATIENCE, waiter).await.expect("every waiter gets its turn").unwrap();
    }
    assert_eq!(*order.lock().unwrap(), (0..16).collect::<Vec<_>>());
    assert_eq!(queue_keys_exist(server, "fifo").await, 0, "the queue is gone with its last waiter");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_whose_future_is_dropped_leaves_the_queue() {
    let server = Server::start();
    let client = client(&server).await;
    let holder = client.fair_lock("dropped").lock_with_lease(LONG_LEASE).await.unwrap();
    let waiter = client.owned_by("gone").fair_lock("dropped");
    let waiting = tokio::spawn(async move { waiter.lock().await });
    eventually!("queued", queue(&server, "dropped", b"gone").await == (1, 1));
    waiting.abort();
    eventually!("the queue entry removed at once", queue(&server, "dropped", b"gone").await == (0, 0));
    assert_eq!(queue_keys_exist(&server, "dropped").await, 0);
    holder.unlock().await.unwrap();
    assert!(!client.fair_lock("dropped").is_locked().await.unwrap(), "nobody took it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_dropped_at_any_point_leaves_no_queue_entry_and_no_hold() {
    let server = Server::start();
    let client = client(&server).await;
    let holder = client.fair_lock("cancel-safe").lock_with_lease(LONG_LEASE).await.unwrap();
    let waiter = client.owned_by("impatient").fair_lock("cancel-safe");
    // Cut short before, during and after its attempts are in flight.
    for micros in (0..3_000).step_by(100) {
        let _ = tokio::time::timeout(Duration::from_micros(micros), waiter.lock()).await;
    }
    eventually!("no queue entry left", queue(&server, "cancel-safe", b"impatient").await == (0, 0));
    assert_eq!(waiter.hold_count().await.unwrap(), 0, "no hold left");
    holder.unlock().await.unwrap();
    // Taken and dropped while the lock is free: given back, not kept.
    for micros in (0..3_000).step_by(100) {
        let _ = tokio::time::timeout(Duration::from_micros(micros), waiter.lock()).await;
    }
    eventually!("no hold left", !waiter.is_locked().await.unwrap());
    assert_eq!(queue(&server, "cancel-safe", b"impatient").await, (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_that_gives_up_hands_its_turn_to_the_next_at_once() {
    let server = Server::start();
    let client = client(&server).await;
    let holder = client.fair_lock("give-up").lock_with_lease(LONG_LEASE).await.unwrap();
    // Redisson's no-wait tryLock(): refused, never queued.
    let polite = client.owned_by("polite").fair_lock("give-up");
    assert!(polite.try_lock(Duration::ZERO, None).await.unwrap().is_none());
    assert_eq!(queue(&server, "give-up", b"polite").await, (0, 0));

    let first = client.owned_by("first").fair_lock("give-up");
    let trying = tokio::spawn(async move { first.try_lock(Duration::from_millis(500), None).await });
    eventually!("first queued", queue(&server, "give-up", b"first").await == (1, 1));
    let second = client.owned_by("second").fair_lock("give-up");
    let waiting = tokio::spawn(async move { second.lock().await });
    eventually!("second queued", queue(&server, "give-up", b"second").await == (2, 2));
    assert!(trying.await.unwrap().unwrap().is_none(), "first gave up");
    eventually!("second moved up", queue(&server, "give-up", b"second").await == (1, 1));
    holder.unlock().await.unwrap();
    // Without the give-up, second would wait for first's deadline: the
    // holder's 60 s lease plus first's wait.
    let guard = tokio::time::timeout(PATIENCE, waiting).await.expect("second takes it").unwrap().unwrap();
    guard.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fair_lock_is_reentrant_and_the_queue_waits_for_the_last_release() {
    let server = Server::start();
    let client = client(&server).await;
    let lock = client.fair_lock("reentrant");
    let outer = lock.lock().await.unwrap();
    let inner = lock.try_lock(Duration::ZERO, None).await.unwrap().expect("re-entered");
    assert_eq!(lock.hold_count().await.unwrap(), 2);
    let other = client.owned_by("other").fair_lock("reentrant");
    let waiting = tokio::spawn({
        let other = other.clone();
        async move { other.lock().await }
    });
    eventually!("queued", queue(&server, "reentrant", b"other").await == (1, 1));
    inner.unlock().await.unwrap();
    assert_eq!(lock.hold_count().await.unwrap(), 1);
    assert!(!waiting.is_finished() && !outer.is_lost());
    outer.unlock().await.unwrap();
    let guard = tokio::time::timeout(PATIENCE, waiting).await.expect("taken at the last release").unwrap().unwrap();
    assert_eq!(other.hold_count().await.unwrap(), 1);
    guard.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fair_wait_timeout_out_of_bounds_is_refused() {
    let server = Server::start();
    for timeout in [Duration::ZERO, rlock_client::MAX_LEASE + Duration::from_millis(1)] {
        let options = ClientOptions::default().with_fair_wait_timeout(timeout);
        let refused = Client::connect(server.client(), options).await;
        assert!(matches!(refused, Err(rlock_client::Error::InvalidFairWaitTimeout(t)) if t == timeout));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_java_waiter_and_an_rlock_waiter_share_one_queue_in_order() {
    let server = Server::start();
    let client = client(&server).await;
    let scripts = FairScripts::default();
    let mut con = admin(&server).await;
    scripts.load(&mut server.connection()).unwrap();
    let held = client.fair_lock("mixed").lock().await.unwrap();
    let now = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    // The Java waiter queues first (Redisson's script, its own clock).
    let java: redis::Value =
        scripts.acquire(b"mixed", b"java:1", 30_000, Some(60_000), now()).query_async(&mut con).await.unwrap();
    assert!(matches!(java, redis::Value::Int(_)), "queued: {java:?}");
    let rust = client.fair_lock("mixed");
    let rust_waiting = tokio::spawn(async move { rust.lock().await });
    eventually!("both queued", status_field(&server, "mixed", None, "queued").await == 2);
    held.unlock().await.unwrap();
    // Only the Java waiter, at the head, may take it now.
    let again: redis::Value =
        scripts.acquire(b"mixed", b"java:1", 30_000, Some(60_000), now()).query_async(&mut con).await.unwrap();
    assert_eq!(again, redis::Value::Nil, "the Java waiter got it first");
    assert!(!rust_waiting.is_finished());
    let _: redis::Value =
        scripts.release(b"mixed", b"java:1", 30_000, b"req", now()).query_async(&mut con).await.unwrap();
    let guard = tokio::time::timeout(Duration::from_secs(5), rust_waiting).await.unwrap().unwrap().unwrap();
    guard.unlock().await.unwrap();
    let _: () = con.del("mixed").await.unwrap();
}
