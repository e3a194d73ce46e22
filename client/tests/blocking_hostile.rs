//! Hostile review of the client's default blocking waiting mode: more
//! waiters than pooled connections, a server restart, a dropped client.

use redis::AsyncCommands;
use rlock_client::{Client, ClientOptions};
use std::time::Duration;
use testkit::{eventually, Server};

mod common;

use common::info;

/// 24 tasks on the default 8 blocking connections, short critical
/// sections: mutual exclusion, and nothing left blocked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_waiters_than_the_default_pool_exclude_each_other() {
    let server = Server::start();
    let client = Client::connect(server.client(), ClientOptions::default()).await.unwrap();
    common::take_turns_exclusively(&client, &server, 24, 10, Duration::ZERO).await;
    assert!(info(&server, "granted").await > 0);
    assert_eq!(info(&server, "blocked").await, 0);
    let clients: String =
        redis::cmd("CLIENT").arg("LIST").query_async(&mut common::admin(&server).await).await.unwrap();
    let connections = clients.lines().count();
    eprintln!("{connections} connections on the server");
}

/// The last Client dropped with 12 waiters (8 blocked on the server, 4 by
/// pub/sub): every waiter ends, the server has nobody blocked, and the
/// holder's release (another client) leaves the lock free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_client_under_blocked_waiters_leaves_nothing() {
    let server = Server::start();
    let holder_client = Client::connect(server.client(), ClientOptions::default()).await.unwrap();
    let holder = holder_client.lock("k").lock().await.unwrap();
    let client = Client::connect(server.client(), ClientOptions::default()).await.unwrap();
    let waiters: Vec<_> = (0..12)
        .map(|_| {
            let lock = client.lock("k");
            tokio::spawn(async move { lock.lock().await.map(|_guard| ()) })
        })
        .collect();
    eventually!("8 blocked", info(&server, "blocked").await == 8);
    drop(client);
    for waiter in waiters {
        let outcome =
            tokio::time::timeout(Duration::from_secs(10), waiter).await.expect("a waiter hung after the drop");
        eprintln!("waiter: {outcome:?}");
    }
    eventually!("nobody blocked", info(&server, "blocked").await == 0);
    holder.unlock().await.unwrap();
    let mut admin = common::admin(&server).await;
    eventually!("the lock free", !admin.exists::<_, bool>("k").await.unwrap());
}

/// A server restart (AOF) with 12 waiters (8 blocked): all of them get the
/// lock in turn after it, one at a time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restart_under_blocked_waiters_then_all_are_served() {
    let mut server = Server::builder().config("appendonly", "yes").config("appendfsync", "always").start();
    let client = Client::connect(server.client(), ClientOptions::default()).await.unwrap();
    let holder = client.lock("k").lock().await.unwrap();
    let url = server.url();
    let waiters: Vec<_> = (0..12)
        .map(|_| {
            let lock = client.lock("k");
            let url = url.clone();
            tokio::spawn(async move {
                let guard = tokio::time::timeout(Duration::from_secs(60), lock.lock()).await.expect("hung").unwrap();
                let mut con = redis::Client::open(url)
                    .unwrap()
                    .get_multiplexed_async_connection_with_config(&common::patient())
                    .await
                    .unwrap();
                let inside: i64 = con.incr("inside", 1).await.unwrap();
                assert_eq!(inside, 1, "two holders at once");
                let _: i64 = con.decr("inside", 1).await.unwrap();
                guard.unlock().await.unwrap();
            })
        })
        .collect();
    eventually!("8 blocked", info(&server, "blocked").await == 8);
    server.restart();
    holder.unlock().await.unwrap();
    for waiter in waiters {
        waiter.await.unwrap();
    }
    assert_eq!(info(&server, "blocked").await, 0);
    let mut admin = common::admin(&server).await;
    eventually!("the lock free", !admin.exists::<_, bool>("k").await.unwrap());
}

/// A blocked waiter whose limit passes returns only once the server's own
/// wait (timed from the call's arrival, so a little longer) ended: a
/// release right after `try_lock` returned `None` leaves the lock free,
/// never granted to the waiter that gave up (a CI run saw that).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_right_after_a_waiter_gave_up_leaves_the_lock_free() {
    let server = Server::start();
    let holder_client = Client::connect(server.client(), ClientOptions::default()).await.unwrap();
    let waiter_client = Client::connect(server.client(), ClientOptions::default()).await.unwrap();
    let (holder, waiter) = (holder_client.lock("k"), waiter_client.lock("k"));
    let mut admin = common::admin(&server).await;
    for round in 0..20 {
        let guard = holder.lock().await.unwrap();
        // Long enough that the first (non-blocking) try ends within it on a
        // loaded machine, so that the second blocks on the server.
        let waited = waiter.try_lock(Duration::from_millis(250), None).await.unwrap();
        assert!(waited.is_none(), "round {round}: granted while held");
        guard.unlock().await.unwrap();
        assert!(!admin.exists::<_, bool>("k").await.unwrap(), "round {round}: granted after the waiter gave up");
    }
    assert_eq!(info(&server, "granted").await, 0);
    // A round blocked on the server ends by the server's timer (one a tick
    // before the caller's limit is followed by a last short one) or, when
    // the caller's limit passed first (a call sent late on a loaded
    // machine), by the caller's RLOCK.CANCEL: at least one per round.
    let cancels = testkit::calls_async(&mut admin, "rlock.cancel").await as i64;
    assert!(info(&server, "wait_timeouts").await + cancels >= 20, "a round did not block on the server");
}

/// A waiter whose limit passes while its call is blocked awaits the call's
/// way off the server's queue (the cancel's reply) before it is told
/// `None`: told at once (as it was), a release sent then could still be
/// granted to it, and given back later behind the caller's back (a CI run
/// saw that: its call reached a loaded server late, so the server's wait
/// outlasted the caller's). The server stops for a while at the limit:
/// the caller answers only after it resumes, well within the 300 ms it
/// gives a cancel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_whose_limit_passes_is_answered_once_its_call_left_the_servers_queue() {
    let server = Server::start();
    let holder_client = Client::connect(server.client(), ClientOptions::default()).await.unwrap();
    let waiter_client = Client::connect(server.client(), ClientOptions::default()).await.unwrap();
    let guard = holder_client.lock("k").lock().await.unwrap();
    let limit = Duration::from_secs(1);
    let waiter = waiter_client.lock("k");
    let started = tokio::time::Instant::now();
    let mut tried = tokio::spawn(async move { waiter.try_lock(limit, None).await });
    eventually!("the waiter blocked on the server", info(&server, "blocked").await == 1);
    server.pause();
    let resume = common::stalls::Resume(&server);
    // Past the limit and its 100 ms grace the caller has sent its cancel,
    // which the stopped server cannot answer: it must still be waiting.
    let early = tokio::time::timeout_at(started + limit + Duration::from_millis(200), &mut tried).await;
    assert!(early.is_err(), "told {early:?} while its call was still blocked on the server");
    drop(resume);
    let tried = tokio::time::timeout(testkit::PATIENCE, tried).await.expect("answered after the resume");
    assert!(tried.unwrap().unwrap().is_none(), "granted while held");
    assert_eq!(info(&server, "blocked").await, 0, "the call is still blocked after the caller's None");
    guard.unlock().await.unwrap();
    assert!(!common::admin(&server).await.exists::<_, bool>("k").await.unwrap(), "granted after the caller's None");
    assert_eq!(info(&server, "granted").await, 0);
}

/// A grant after a wait longer than the lease: the lease runs from the
/// grant, so the guard is live (it was reported lost at once, as if the
/// lease had run from the request), a fixed hold unlocks, and a watchdog
/// hold is renewed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_after_a_wait_longer_than_the_lease_holds_for_the_whole_lease() {
    let server = Server::start();
    // A watchdog round every 667 ms, each bounded by that: a loaded machine
    // ran rounds late by more than the 667 ms that a 1 s lease left.
    let short = Duration::from_secs(2);
    let waited = short + Duration::from_secs(1);
    let holder_client = Client::connect(server.client(), ClientOptions::default()).await.unwrap();
    let holder = holder_client.lock("k");
    let client = Client::connect(server.client(), ClientOptions::default().with_watchdog_timeout(short)).await.unwrap();
    let lock = client.lock("k");

    let _held = holder.lock_with_lease(waited).await.unwrap();
    let fixed = lock.lock_with_lease(short).await.unwrap();
    assert!(!fixed.is_lost(), "a fresh fixed grant reported lost");
    fixed.unlock().await.expect("the fixed hold unlocks");

    let _held = holder.lock_with_lease(waited).await.unwrap();
    let renewed = lock.lock().await.unwrap();
    assert!(!renewed.is_lost(), "a fresh watchdog grant reported lost");
    // Renewed past the lease it was granted with: four renewals span it.
    let mut admin = common::admin(&server).await;
    let renewals = testkit::rlock_info_async(&mut admin, "renewed").await;
    eventually!("renewed four times", testkit::rlock_info_async(&mut admin, "renewed").await >= renewals + 4);
    assert!(!renewed.is_lost() && lock.is_held().await.unwrap(), "the watchdog did not keep it");
    renewed.unlock().await.unwrap();
    assert_eq!(info(&server, "granted").await, 2, "both were granted on the server");
}

/// A blocked grant's reply may come after other work (here a slow command
/// in the releaser's pipeline outlasts the grant's lease, and the next
/// waiter is granted meanwhile): its lease counts from when the server
/// granted it (the full reply's time waited), so the grant is reported
/// lost, never taken as held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_whose_lease_ends_before_its_reply_is_reported_lost() {
    let server = common::stallable_server();
    let client = Client::connect(server.client(), ClientOptions::default()).await.unwrap();
    let (first, second) = (client.lock("k"), client.lock("k"));
    let mut raw = common::admin(&server).await;
    raw.set_response_timeout(Duration::from_secs(10));
    let _: Option<i64> = redis::cmd("RLOCK.ACQUIRE").arg("k").arg("h").arg(60_000).query_async(&mut raw).await.unwrap();
    let short = {
        let first = first.clone();
        tokio::spawn(async move { first.lock_with_lease(Duration::from_millis(300)).await })
    };
    eventually!("the first waiter blocked", info(&server, "blocked").await == 1);
    let long = {
        let second = second.clone();
        tokio::spawn(async move { second.lock_with_lease(Duration::from_secs(60)).await })
    };
    eventually!("the second waiter blocked", info(&server, "blocked").await == 2);
    let mut release_then_stall = redis::pipe();
    release_then_stall.cmd("RLOCK.RELEASE").arg("k").arg("h").arg(60_000).cmd("DEBUG").arg("SLEEP").arg(0.5);
    let _: Vec<redis::Value> = release_then_stall.query_async(&mut raw).await.unwrap();
    let (short, long) = (short.await.unwrap().unwrap(), long.await.unwrap().unwrap());
    assert!(short.is_lost(), "the first grant's lease ended in the stall, yet its guard looks held");
    assert!(!long.is_lost());
    long.unlock().await.unwrap();
}
