//! How rlock-client's waiters use pub/sub: one wake-up per release per
//! client, no subscription left behind, and a subscription that survives
//! outages of any length.

mod common;

use common::{info, numsub};
use redis::aio::ConnectionManager;
use rlock_client::{Client, ClientOptions, RetryOptions};
use std::io::Write;
use std::time::Duration;
use testkit::{eventually, Server, PATIENCE};

/// Far below [`LEASE_MS`]: a waiter woken within it was not woken by its timer.
const PROMPTLY: Duration = Duration::from_secs(20);
const LEASE_MS: i64 = 60_000;
const HOLDER: &str = "holder-on-another-client:1";

async fn rlock(server: &Server, command: &str, name: &str) -> Option<i64> {
    let mut con = server.client().get_multiplexed_async_connection_with_config(&common::patient()).await.unwrap();
    redis::cmd(command).arg(name).arg(HOLDER).arg(LEASE_MS).query_async(&mut con).await.unwrap()
}

/// Takes `name` for [`HOLDER`], as another client would.
async fn hold(server: &Server, name: &str) {
    assert_eq!(rlock(server, "RLOCK.ACQUIRE", name).await, None);
}

async fn release(server: &Server, name: &str) {
    assert_eq!(rlock(server, "RLOCK.RELEASE", name).await, Some(1));
}

/// Options that wait by pub/sub (not the default blocking mode).
fn pubsub_waiting() -> ClientOptions {
    ClientOptions::default().with_blocking_connections(0)
}

async fn pubsub_client(server: &Server) -> Client {
    Client::connect(server.client(), pubsub_waiting()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_wakes_one_waiter_of_a_client_not_all() {
    const WAITERS: i64 = 20;
    let server = Server::start();
    let client = pubsub_client(&server).await;
    hold(&server, "herd").await;
    let mut waiters = tokio::task::JoinSet::new();
    for _ in 0..WAITERS {
        let lock = client.lock("herd");
        waiters.spawn(async move { lock.lock().await.unwrap().unlock().await.unwrap() });
    }
    // Each waiter is refused twice (before and after subscribing), then waits.
    eventually!("every waiter to wait", PATIENCE, info(&server, "contended").await >= 2 * WAITERS);
    let refused_before = info(&server, "contended").await;

    // Each releases in turn: WAITERS hand-offs.
    release(&server, "herd").await;
    while let Some(waiter) = tokio::time::timeout(PROMPTLY, waiters.join_next()).await.expect("hand-offs") {
        waiter.unwrap();
    }
    let refused = info(&server, "contended").await - refused_before;
    // Waking every waiter on every release costs WAITERS/2 per hand-off.
    assert!(refused <= 2 * WAITERS, "{refused} refused acquires for {WAITERS} hand-offs");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_waiter_passes_its_wake_up_on() {
    let server = Server::start();
    let client = pubsub_client(&server).await;
    hold(&server, "passed").await;
    let channel = rlock_client::release_channel(b"passed");

    // The first waiter in line, driven only until it waits.
    let first = client.lock("passed");
    let mut first = Box::pin(first.lock());
    tokio::select! {
        _ = &mut first => panic!("acquired a held lock"),
        _ = async { eventually!("the first waiter", PATIENCE, info(&server, "contended").await >= 2) } => {}
    }
    let second = client.lock("passed");
    let second = tokio::spawn(async move { second.lock().await.unwrap().unlock().await.unwrap() });
    eventually!("the second waiter", PATIENCE, info(&server, "contended").await >= 4);

    // The release message goes to the first waiter, which is not polled;
    // once it has reached this process (as it has reached this subscriber),
    // the first waiter is cancelled.
    let (observed, mut observer) = tokio::sync::mpsc::unbounded_channel();
    let resp3 = redis::Client::open(format!("{}?protocol=resp3", server.url())).unwrap();
    let config = redis::AsyncConnectionConfig::new().set_push_sender(observed);
    let mut observing = resp3.get_multiplexed_async_connection_with_config(&config).await.unwrap();
    observing.subscribe(&channel).await.unwrap();
    release(&server, "passed").await;
    let message = async { while observer.recv().await.expect("pushes").kind != redis::PushKind::Message {} };
    tokio::time::timeout(PATIENCE, message).await.expect("the release message");
    drop(first);
    tokio::time::timeout(PROMPTLY, second).await.expect("the wake-up passed on").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_cancelled_during_its_subscribe_leaves_no_subscription() {
    // Commands go to one server, pub/sub to another, whose SUBSCRIBE a
    // DEBUG SLEEP holds up while the acquire attempts answer at once.
    let commands = Server::start();
    let pubsub = Server::builder().config("enable-debug-command", "yes").start();
    let connection = ConnectionManager::new(commands.client()).await.unwrap();
    let client = Client::with_connection(pubsub.client(), connection, pubsub_waiting()).unwrap();
    hold(&commands, "warm").await;
    hold(&commands, "slow").await;
    // Opens the pub/sub connection.
    assert!(client.lock("warm").try_lock(Duration::from_millis(50), None).await.unwrap().is_none());

    let mut sleeper = std::net::TcpStream::connect(("127.0.0.1", pubsub.port())).unwrap();
    sleeper.write_all(b"DEBUG SLEEP 1\r\n").unwrap();
    let waiting = tokio::time::timeout(Duration::from_millis(300), client.lock("slow").lock()).await;
    assert!(waiting.is_err(), "cancelled while its SUBSCRIBE waits for the server");

    let channel = rlock_client::release_channel(b"slow");
    eventually!("the unsubscription", PATIENCE, numsub(&pubsub, &channel).await == 0);
    drop(sleeper);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiters_are_woken_by_releases_after_an_outage_longer_than_redis_rs_retries() {
    // redis-rs's connection manager gives up reconnecting after 6 retries
    // with jittered doubling delays from 100 ms: at most 12.6 s.
    const OUTAGE: Duration = Duration::from_secs(14);
    let mut server = Server::builder().config("appendonly", "yes").config("appendfsync", "always").start();
    hold(&server, "outage").await;
    let options = pubsub_waiting().with_retry(RetryOptions::new(u32::MAX, Duration::from_millis(100)));
    let client = Client::connect(server.client(), options).await.unwrap();
    let lock = client.lock("outage");
    let waiting = tokio::spawn(async move { lock.lock().await.unwrap().unlock().await.unwrap() });
    let channel = rlock_client::release_channel(b"outage");
    eventually!("the waiter's subscription", PATIENCE, numsub(&server, &channel).await == 1);

    server.kill();
    // The outage itself: nothing to wait for.
    tokio::time::sleep(OUTAGE).await;
    tokio::task::block_in_place(|| server.restart());
    // The waiter found the lock still held (the AOF kept it), and waits.
    eventually!("the waiter to retry after the outage", PROMPTLY, info(&server, "contended").await >= 1);
    release(&server, "outage").await;
    tokio::time::timeout(PROMPTLY, waiting).await.expect("woken by the release, not the 60 s lease").unwrap();
}
