//! The permit-expirable semaphore of rlock-client against a real server:
//! renewed permits of a SIGKILLed holder come back after one lease, a
//! lapsed release says so, losses are signalled, cancelled calls leave no
//! permit taken. Workers are this test binary, started again with
//! `RLOCK_WORKER` set, running only the `worker` test.

use redis::AsyncCommands;
use rlock_client::{Client, Error, PermitOptions};
use std::time::{Duration, Instant};
use testkit::{eventually, Server};
use tokio::io::{AsyncBufReadExt, BufReader};

mod common;

const LEASE: Duration = Duration::from_millis(1000);
/// The worker's renewed lease: renewed every 2 s, 4 s of slack for its
/// process under the suite's load, which can leave a process almost no CPU
/// for 2-3 s (with 1 s, a renewal came more than the 667 ms of slack late,
/// on Redis 7.0 and Valkey 8.1).
const HOLDER_LEASE: Duration = Duration::from_secs(6);
const HELD_MARKER: &str = "rlock-permits-held";
const HELD_PERMITS: u32 = 2;

/// Worker entry point; a no-op in the normal test run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker() {
    let (Ok(role), Ok(url)) = (std::env::var("RLOCK_WORKER"), std::env::var("RLOCK_URL")) else {
        return;
    };
    assert_eq!(role, "permit-holder", "unknown worker role {role}");
    let client = Client::open(&url).await.unwrap();
    let semaphore = client.permit_semaphore("pool");
    let mut permits = vec![];
    for _ in 0..HELD_PERMITS {
        permits.push(semaphore.acquire_with(PermitOptions::renewed(HOLDER_LEASE)).await.unwrap());
    }
    println!("{HELD_MARKER}");
    std::future::pending::<()>().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewed_permits_of_a_sigkilled_holder_come_back_after_one_lease() {
    let server = Server::shared();
    let client = Client::open(&server.url()).await.unwrap();
    let semaphore = client.permit_semaphore("pool");
    assert!(semaphore.try_set_permits(3).await.unwrap());
    let mut holder = common::start_worker("permit-holder", &server.url());
    let mut lines = BufReader::new(holder.stdout.take().unwrap()).lines();
    while !lines.next_line().await.unwrap().expect("the holder exited").contains(HELD_MARKER) {}

    // Held past several leases: the holder's client renews them. The
    // server shows each permit's lease end (its score); both must move a
    // lease past the first lease's end, while neither lapses.
    let mut admin = common::admin(&server).await;
    let first_end = *lease_ends(&mut admin).await.iter().max().unwrap();
    let renewed_past = first_end + HOLDER_LEASE.as_millis() as i64;
    eventually!("renewed a lease past the first lease's end", {
        assert_eq!(semaphore.acquired().await.unwrap(), i64::from(HELD_PERMITS), "renewed while the holder lives");
        lease_ends(&mut admin).await.iter().all(|&end| end > renewed_past)
    });

    holder.start_kill().unwrap();
    holder.wait().await.unwrap();
    let killed = Instant::now();
    // Nobody renews them now: their leases end at most one lease after the
    // kill, and the first call after that gives them back.
    let killed_at = server_time_ms(&mut admin).await;
    let last_end = *lease_ends(&mut admin).await.iter().max().unwrap();
    assert!(last_end <= killed_at + HOLDER_LEASE.as_millis() as i64, "a lease ends {last_end}, killed at {killed_at}");
    assert_eq!(semaphore.available().await.unwrap(), 3 - i64::from(HELD_PERMITS), "back before their leases ended");
    eventually!("the server's clock past the leases' end", server_time_ms(&mut admin).await > last_end + 1);
    assert_eq!(semaphore.available().await.unwrap(), 3, "the permits came back at their leases' end");
    let back = killed.elapsed();
    eprintln!("permits: a SIGKILLed holder's permits came back {back:?} after the kill (lease {HOLDER_LEASE:?})");
}

/// The lease ends of the permits of "pool", in the server's Unix ms.
async fn lease_ends(admin: &mut redis::aio::MultiplexedConnection) -> Vec<i64> {
    let ends: Vec<(Vec<u8>, i64)> =
        admin.zrange_withscores(rlock_protocol::permit_timeout_key(b"pool"), 0, -1).await.unwrap();
    assert_eq!(ends.len(), HELD_PERMITS as usize, "the holder's permits: {ends:?}");
    ends.into_iter().map(|(_, end)| end).collect()
}

async fn server_time_ms(admin: &mut redis::aio::MultiplexedConnection) -> i64 {
    let (seconds, micros): (i64, i64) = redis::cmd("TIME").query_async(admin).await.unwrap();
    seconds * 1000 + micros / 1000
}

#[tokio::test]
async fn a_fixed_lease_ends_and_its_release_says_it_lapsed() {
    let server = Server::shared();
    let client = Client::open(&server.url()).await.unwrap();
    let semaphore = client.permit_semaphore("pool");
    assert!(semaphore.try_set_permits(1).await.unwrap());
    let permit = semaphore.acquire(Duration::from_millis(100)).await.unwrap();
    assert_eq!(permit.id_hex().len(), 32);
    let mut admin = common::admin(&server).await;
    let score: Option<i64> =
        admin.zscore(rlock_protocol::permit_timeout_key(b"pool"), permit.id().as_slice()).await.unwrap();
    assert!(score.is_some(), "the raw id is the zset member");

    // Its lease ends: lost; its release says it lapsed (the server still
    // knows the id: no other call has reclaimed it yet), and the permit is
    // free again.
    tokio::time::timeout(testkit::PATIENCE, permit.lost()).await.expect("a fixed lease ends");
    let score = score.unwrap();
    eventually!("the server's lease ended", {
        let (seconds, micros): (i64, i64) = redis::cmd("TIME").query_async(&mut admin).await.unwrap();
        seconds * 1000 + micros / 1000 > score
    });
    assert!(matches!(permit.release().await, Err(Error::PermitLapsed)), "a lapsed release says so");
    let other = semaphore.try_acquire(LEASE, Duration::ZERO).await.unwrap().expect("the lapsed permit is free");
    other.release().await.unwrap();
    assert_eq!(semaphore.available().await.unwrap(), 1);
}

#[tokio::test]
async fn a_renewed_permit_removed_from_the_server_is_reported_lost() {
    let server = Server::shared();
    let client = Client::open(&server.url()).await.unwrap();
    let semaphore = client.permit_semaphore("pool");
    assert!(semaphore.try_set_permits(1).await.unwrap());
    let permit = semaphore.acquire_with(PermitOptions::renewed(Duration::from_millis(300))).await.unwrap();
    let mut admin = common::admin(&server).await;
    let _: i64 = admin.zrem(rlock_protocol::permit_timeout_key(b"pool"), permit.id().as_slice()).await.unwrap();
    tokio::time::timeout(testkit::PATIENCE, permit.lost()).await.expect("the renewal found it gone");
    assert!(permit.is_lost());
    assert!(matches!(permit.release().await, Err(Error::NotOwner)));
}

#[tokio::test]
async fn waiters_get_a_permit_at_a_release_or_at_a_lease_end_and_cancelled_calls_take_none() {
    let server = common::stallable_server();
    let client = Client::open(&server.url()).await.unwrap();
    let semaphore = client.permit_semaphore("pool");
    assert!(semaphore.try_set_permits(1).await.unwrap());
    let held = semaphore.acquire(LEASE * 60).await.unwrap();
    assert!(semaphore.try_acquire(LEASE, Duration::from_millis(50)).await.unwrap().is_none(), "the wait ran out");

    // A release wakes a waiter.
    let waiter = tokio::spawn({
        let semaphore = semaphore.clone();
        async move { semaphore.try_acquire(LEASE * 60, testkit::PATIENCE).await.unwrap() }
    });
    let channel = rlock_protocol::semaphore_channel(b"pool");
    eventually!("the waiter subscribed", common::numsub(&server, &channel).await == 1);
    held.release().await.unwrap();
    let held = waiter.await.unwrap().expect("woken by the release");

    // A lease end publishes nothing: the waiter comes back at its end.
    drop(held);
    eventually!("the dropped permit was released", semaphore.available().await.unwrap() == 1);
    let short = semaphore.acquire(Duration::from_millis(200)).await.unwrap();
    let started = Instant::now();
    let next = semaphore.try_acquire(LEASE, testkit::PATIENCE).await.unwrap().expect("free at the lease's end");
    assert!(started.elapsed() >= Duration::from_millis(150), "{:?}", started.elapsed());
    drop(short);
    next.release().await.unwrap();

    // A waiter dropped mid-wait, and a take cancelled while the server
    // runs it, leave no permit taken.
    let held = semaphore.acquire(LEASE * 60).await.unwrap();
    assert!(tokio::time::timeout(Duration::from_millis(50), semaphore.acquire(LEASE)).await.is_err());
    held.release().await.unwrap();
    let stalled = common::stall(&server, 0.3).await;
    let taking = tokio::time::timeout(Duration::from_millis(50), semaphore.try_acquire(LEASE * 60, Duration::ZERO));
    assert!(taking.await.is_err(), "the server is stalled");
    stalled.await.unwrap();
    eventually!("the cancelled take was given back", semaphore.acquired().await.unwrap() == 0);
    assert_eq!(semaphore.available().await.unwrap(), 1);

    semaphore.add_permits(2).await.unwrap();
    assert_eq!(semaphore.available().await.unwrap(), 3);
    semaphore.set_permits(1).await.unwrap();
    assert_eq!(semaphore.available().await.unwrap(), 1);
    assert!(!semaphore.try_set_permits(9).await.unwrap());
}
