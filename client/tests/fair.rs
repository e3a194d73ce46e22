//! rlock-client's fair lock against a real redis-server with the module:
//! arrival order, reentrancy, the watchdog, a waiter that goes away, and a
//! Java-style waiter (Redisson's scripts) in the same queue.

#[macro_use]
mod common;

use common::admin;
use redis::AsyncCommands;
use rlock_client::{Client, ClientOptions, Error, Guard};
use std::sync::Arc;
use std::time::Duration;
use testkit::{FairScripts, Server};
use tokio::sync::Mutex;

const WATCHDOG: Duration = Duration::from_millis(600);

async fn client(server: &Server, fair_wait: Duration) -> Client {
    let options = ClientOptions::default().with_watchdog_timeout(WATCHDOG).with_fair_wait_timeout(fair_wait);
    Client::connect(server.client(), options).await.expect("client")
}

/// Queued waiters, from RFAIR.STATUS.
async fn queued(server: &Server, name: &str) -> i64 {
    let status: Vec<redis::Value> =
        redis::cmd("RFAIR.STATUS").arg(name).query_async(&mut admin(server).await).await.unwrap();
    redis::from_redis_value(status[11].clone()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_get_the_lock_in_the_order_they_asked() {
    let server = Server::start();
    let client = client(&server, Duration::from_secs(60)).await;
    let first = client.fair_lock("line").lock().await.unwrap();
    let order = Arc::new(Mutex::new(Vec::new()));
    let mut waiters = Vec::new();
    for n in 0..16 {
        let (lock, order) = (client.fair_lock("line"), order.clone());
        waiters.push(tokio::spawn(async move {
            let guard = lock.lock().await.unwrap();
            order.lock().await.push(n);
            tokio::time::sleep(Duration::from_millis(2)).await;
            guard.unlock().await.unwrap();
        }));
        // The next one asks once this one is queued.
        eventually!("waiter {n} queued", queued(&server, "line").await == n + 1);
    }
    first.unlock().await.unwrap();
    for waiter in waiters {
        waiter.await.unwrap();
    }
    assert_eq!(*order.lock().await, (0..16).collect::<Vec<_>>());
    assert_eq!(queued(&server, "line").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fair_lock_is_reentrant_and_renewed_by_the_watchdog() {
    let server = Server::start();
    let client = client(&server, Duration::from_secs(60)).await;
    let lock = client.fair_lock("renewed");
    let outer = lock.lock().await.unwrap();
    let inner = lock.try_lock(Duration::ZERO, None).await.unwrap().expect("re-entry");
    assert_eq!(lock.hold_count().await.unwrap(), 2);
    tokio::time::sleep(WATCHDOG * 2).await;
    assert!(lock.is_held().await.unwrap() && !outer.is_lost(), "renewed past two leases");
    inner.unlock().await.unwrap();
    outer.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_that_gives_up_or_is_dropped_leaves_the_queue_at_once() {
    let server = Server::start();
    let client = client(&server, Duration::from_secs(300)).await;
    let held = client.fair_lock("q").lock().await.unwrap();
    let other = client.fair_lock("q");
    assert!(other.try_lock(Duration::from_millis(30), None).await.unwrap().is_none());
    eventually!("the timed-out waiter left", queued(&server, "q").await == 0);

    let dropped = client.fair_lock("q");
    let waiting = tokio::spawn(async move { dropped.lock().await.map(drop) });
    eventually!("the waiter queued", queued(&server, "q").await == 1);
    waiting.abort();
    eventually!("the aborted waiter left", queued(&server, "q").await == 0);

    // With the queue empty, the next waiter gets the lock at the release,
    // not 5 minutes later.
    let next = client.fair_lock("q");
    let next_waiting = tokio::spawn(async move { next.lock().await });
    eventually!("the next waiter queued", queued(&server, "q").await == 1);
    held.unlock().await.unwrap();
    let guard: Guard = tokio::time::timeout(Duration::from_secs(5), next_waiting).await.unwrap().unwrap().unwrap();
    guard.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_java_waiter_and_an_rlock_waiter_share_one_queue_in_order() {
    let server = Server::start();
    let client = client(&server, Duration::from_secs(60)).await;
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
    eventually!("both queued", queued(&server, "mixed").await == 2);
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fair_wait_timeout_out_of_range_is_refused() {
    let server = Server::start();
    let options = ClientOptions::default().with_fair_wait_timeout(Duration::ZERO);
    assert!(matches!(Client::connect(server.client(), options).await, Err(Error::InvalidFairWaitTimeout(_))));
}
