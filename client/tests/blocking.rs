//! The blocking waiting mode (`ClientOptions::blocking_connections`):
//! waiters of a plain lock block on the server and are granted the lock
//! there; cancelled, timed-out and cut-off waits leave nothing behind.

use redis::AsyncCommands;
use rlock_client::{Client, ClientOptions};
use std::time::Duration;
use testkit::{eventually, Server};

mod common;

use common::info;

async fn blocking_client(server: &Server, connections: usize) -> Client {
    let options = ClientOptions::default().with_blocking_connections(connections);
    Client::connect(server.client(), options).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_tasks_on_eight_blocking_connections_exclude_each_other() {
    let server = Server::shared();
    let client = blocking_client(&server, 8).await;
    common::take_turns_exclusively(&client, &server, 16, 20, Duration::from_millis(1)).await;
    let granted = info(&server, "granted").await;
    assert!(granted > 0, "the waiters blocked on the server ({granted} grants)");
    assert_eq!(info(&server, "blocked").await, 0);
    eprintln!("blocking mode: {granted} of 320 acquires granted by the server");
}

#[tokio::test]
async fn given_up_waits_leave_no_grant_behind() {
    let server = Server::shared();
    let client = blocking_client(&server, 2).await;
    let holder = client.lock("k").lock().await.unwrap();

    give_up_two_waits(&client, &server, Duration::from_millis(200)).await;

    holder.unlock().await.unwrap();
    let mut admin = common::admin(&server).await;
    eventually!("nobody holds the lock", !admin.exists::<_, bool>("k").await.unwrap());
}

/// Two waits given up while blocked on the held lock `k`: one whose
/// `limit` runs out, and one dropped.
async fn give_up_two_waits(client: &Client, server: &Server, limit: Duration) {
    let timed_out = client.lock("k").try_lock(limit, None).await.unwrap();
    assert!(timed_out.is_none());
    eventually!("the server unblocked it", info(server, "blocked").await == 0);
    let waiting = tokio::spawn({
        let lock = client.lock("k");
        async move { lock.lock().await }
    });
    eventually!("it blocked", info(server, "blocked").await == 1);
    waiting.abort();
    let _ = waiting.await;
    eventually!("the server unblocked it", info(server, "blocked").await == 0);
}

/// Fifty waiters dropped while blocked take their calls off the server's
/// queue (RLOCK.CANCEL), on connections that stay open for the next
/// waits: the release then grants the lock once, to the live waiter
/// queued behind them, never to a caller that is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_waits_leave_the_queue_and_the_release_grants_a_live_waiter() {
    let server = Server::shared();
    let client = blocking_client(&server, 51).await;
    let holder = client.lock("k").lock().await.unwrap();
    let wait = |lock: rlock_client::Lock| tokio::spawn(async move { lock.lock().await });
    let dropped: Vec<_> = (0..50).map(|_| wait(client.lock("k"))).collect();
    eventually!("they blocked", info(&server, "blocked").await == 50);
    let live = wait(client.lock("k"));
    eventually!("the live waiter blocked behind them", info(&server, "blocked").await == 51);
    let connected = connected_clients(&server).await;

    let dropped_at = std::time::Instant::now();
    for waiter in &dropped {
        waiter.abort();
    }
    for waiter in dropped {
        assert!(waiter.await.unwrap_err().is_cancelled());
    }
    eventually!("the dropped waits left the queue", info(&server, "blocked").await == 1);
    eprintln!("50 dropped waits left the server's queue {:?} after the drop", dropped_at.elapsed());
    assert_eq!(connected_clients(&server).await, connected, "cancelled, not killed: no connection was closed");

    let granted = info(&server, "granted").await;
    holder.unlock().await.unwrap();
    let guard = live.await.unwrap().unwrap();
    assert_eq!(info(&server, "granted").await, granted + 1, "one grant, to the live waiter");
    guard.unlock().await.unwrap();
    assert_eq!(info(&server, "blocked").await, 0);
}

/// Every blocking call's connection goes back to the pool when the call
/// ends (granted, timed out, or given up while blocked): rounds of waits
/// open no more connections than the pool holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pool_takes_its_connections_back_however_a_wait_ends() {
    let server = Server::shared();
    let client = blocking_client(&server, 2).await;
    let before = connected_clients(&server).await;
    for _ in 0..5 {
        let holder = client.lock("k").lock().await.unwrap();
        give_up_two_waits(&client, &server, Duration::from_millis(20)).await;
        let granted = tokio::spawn({
            let lock = client.lock("k");
            async move { lock.lock().await.unwrap().unlock().await }
        });
        eventually!("it blocked", info(&server, "blocked").await == 1);
        holder.unlock().await.unwrap();
        granted.await.unwrap().unwrap();
    }
    let opened = connected_clients(&server).await - before;
    assert!((1..=2).contains(&opened), "{opened} connections for 15 blocking waits on a pool of 2");
}

/// The server's connections other than the tests' admin ones.
async fn connected_clients(server: &Server) -> i64 {
    let list: String = redis::cmd("CLIENT").arg("LIST").query_async(&mut common::admin(server).await).await.unwrap();
    let admin = format!(" name={} ", common::ADMIN_NAME);
    list.lines().filter(|line| !line.contains(&admin)).count() as i64
}

#[tokio::test]
async fn a_killed_blocking_connection_is_settled_and_the_wait_goes_on() {
    let server = Server::shared();
    let client = blocking_client(&server, 1).await;
    let holder = client.lock("k").lock().await.unwrap();
    let waiting = tokio::spawn({
        let lock = client.lock("k");
        async move { lock.lock().await.unwrap() }
    });
    eventually!("it blocked", info(&server, "blocked").await == 1);
    let mut admin = common::admin(&server).await;
    let clients: String = redis::cmd("CLIENT").arg("LIST").query_async(&mut admin).await.unwrap();
    let id = testkit::blocked_acquire_client_id(&clients).expect("the blocked connection");
    let _: i64 = redis::cmd("CLIENT").arg("KILL").arg("ID").arg(&id).query_async(&mut admin).await.unwrap();
    holder.unlock().await.unwrap();
    let guard = tokio::time::timeout(testkit::PATIENCE, waiting).await.expect("the wait went on").unwrap();
    let holds: Option<i64> = admin.hget("k", guard.lock().owner()).await.unwrap();
    assert_eq!(holds, Some(1), "one hold, not a leaked second");
    guard.unlock().await.unwrap();
    let exists: bool = admin.exists("k").await.unwrap();
    assert!(!exists);
}

/// The server stops (SIGSTOP) while a waiter blocks: the caller's limit and
/// the holder's lease both pass meanwhile, and its `CLIENT UNBLOCK` goes
/// unanswered. When the server runs again it may grant the lock to the
/// blocked call before it unblocks it; that grant must go back at once, not
/// stay until its 30 s lease ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_made_as_a_stopped_server_resumes_reaches_no_gone_caller() {
    let server = Server::shared();
    let client = blocking_client(&server, 2).await;
    let mut admin = common::admin(&server).await;
    let _: Option<i64> =
        redis::cmd("RLOCK.ACQUIRE").arg("k").arg("other").arg(500).query_async(&mut admin).await.unwrap();
    let waiting = tokio::spawn({
        let lock = client.lock("k");
        async move { lock.try_lock(Duration::from_millis(300), None).await }
    });
    eventually!("it blocked", info(&server, "blocked").await == 1);
    server.pause();
    // The stop itself is under test: the blocked call's 300 ms run out while the server is stopped, which shows nothing to wait for.
    tokio::time::sleep(Duration::from_secs(1)).await;
    server.resume();
    let outcome = tokio::time::timeout(testkit::PATIENCE, waiting).await.expect("the try ended").unwrap();
    if let Ok(Some(guard)) = outcome {
        guard.unlock().await.unwrap();
    }
    eventually!("nobody holds the lock", Duration::from_secs(5), !admin.exists::<_, bool>("k").await.unwrap());
    assert_eq!(info(&server, "blocked").await, 0);
}

/// The server is killed and restarted (without persistence) under blocked
/// waiters: each wait ends, with the lock or a connection error, none
/// hangs, none leaves a hold; the pool then blocks on the new server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocked_waiters_come_through_a_server_restart() {
    let mut server = Server::start();
    let client = blocking_client(&server, 4).await;
    let mut admin = common::admin(&server).await;
    let _: Option<i64> =
        redis::cmd("RLOCK.ACQUIRE").arg("k").arg("other").arg(60_000).query_async(&mut admin).await.unwrap();
    let waiters: Vec<_> = (0..4)
        .map(|_| {
            let lock = client.lock("k");
            tokio::spawn(async move {
                if let Ok(guard) = lock.lock().await {
                    guard.unlock().await.unwrap();
                }
            })
        })
        .collect();
    eventually!("they blocked", info(&server, "blocked").await == 4);
    server.restart();
    for waiter in waiters {
        tokio::time::timeout(testkit::PATIENCE, waiter).await.expect("the wait ended").unwrap();
    }
    let mut admin = common::admin(&server).await;
    assert!(!admin.exists::<_, bool>("k").await.unwrap(), "no hold left");
    let _: Option<i64> =
        redis::cmd("RLOCK.ACQUIRE").arg("k").arg("other").arg(200).query_async(&mut admin).await.unwrap();
    let granted = info(&server, "granted").await;
    let guard = client.lock("k").lock().await.unwrap();
    assert_eq!(info(&server, "granted").await, granted + 1, "granted by the restarted server, from the pool");
    guard.unlock().await.unwrap();
}

/// A waiter dropped just as the lock is granted to it, many times over:
/// whichever comes first on the server, no grant stays behind, and the
/// pool's connections stay usable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_dropped_as_it_is_granted_leaves_no_hold() {
    let server = Server::shared();
    let client = blocking_client(&server, 2).await;
    let mut admin = common::admin(&server).await;
    for round in 0..20u64 {
        let holder = client.lock("k").lock().await.unwrap();
        let waiting = tokio::spawn({
            let lock = client.lock("k");
            async move { lock.lock().await }
        });
        eventually!("it blocked", info(&server, "blocked").await == 1);
        // Vary which of the two the server sees first (a delay, not a wait).
        let (unlocked, _) = tokio::join!(holder.unlock(), async {
            tokio::time::sleep(Duration::from_micros(round * 50)).await;
            waiting.abort();
        });
        unlocked.unwrap();
        if let Ok(Ok(guard)) = waiting.await {
            guard.unlock().await.unwrap(); // it finished before the abort
        }
        eventually!(format!("round {round}: nobody holds the lock"), !admin.exists::<_, bool>("k").await.unwrap());
        assert_eq!(info(&server, "blocked").await, 0);
    }
    let guard = client.lock("k").lock().await.unwrap();
    guard.unlock().await.unwrap();
}

/// Two tasks, each an owner (`Client::owned_by`), each holding a lock the
/// other waits for on the server: the wait that closes the cycle ends at
/// once with `Error::Deadlock`, naming it; the other is granted once the
/// lock it waits for is let go.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_that_closes_a_cycle_is_told_deadlock() {
    let server = Server::shared();
    let client = blocking_client(&server, 2).await;
    let (first, second) = (|name| client.owned_by("task-1").lock(name), |name| client.owned_by("task-2").lock(name));
    let a = first("a").lock().await.unwrap();
    let _b = second("b").lock().await.unwrap();
    let waiting = tokio::spawn({
        let lock = second("a");
        async move { lock.lock().await.unwrap().unlock().await.unwrap() }
    });
    eventually!("the second client blocked on a", info(&server, "blocked").await == 1);
    let error = first("b").lock().await.expect_err("a deadlock");
    let rlock_client::Error::Deadlock { cycle } = &error else { panic!("{error:?}") };
    assert_eq!(cycle, "task-1 waits for b held by task-2, task-2 waits for a held by task-1");
    a.unlock().await.unwrap();
    tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("granted a").unwrap();
}

/// `Lock::info`: the holder with its holds and lease, and a waiter blocked
/// on the server with its connection and times; a fenced lock's token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn info_tells_the_holders_and_the_waiters_on_the_server() {
    let server = Server::shared();
    let client = blocking_client(&server, 2).await;
    let lock = client.lock("k");
    let first = lock.lock().await.unwrap();
    let second = lock.lock().await.unwrap();
    let waiting = tokio::spawn({
        let lock = client.lock("k");
        async move { lock.lock().await.unwrap().unlock().await.unwrap() }
    });
    eventually!("it blocked", info(&server, "blocked").await == 1);
    let found = lock.info().await.unwrap();
    assert_eq!((found.kind.as_str(), found.holders.len(), found.waiters.len()), ("lock", 1, 1), "{found:?}");
    let holder = &found.holders[0];
    assert_eq!((holder.owner.as_slice(), holder.holds), (lock.owner(), 2));
    assert!(holder.lease.is_some_and(|lease| lease > Duration::ZERO) && found.ttl.is_some());
    assert!(found.waiters[0].wait_left > Duration::ZERO && found.token.is_none());
    second.unlock().await.unwrap();
    first.unlock().await.unwrap();
    waiting.await.unwrap();

    let fenced = client.fenced_lock("f");
    let guard = fenced.lock().await.unwrap();
    let found = fenced.info().await.unwrap();
    assert_eq!((found.kind.as_str(), found.token), ("fenced", guard.token()));
    assert_eq!(client.lock("missing").info().await.unwrap().kind, "none");
}

/// `Client::list_locks`: every lock on the server once at least, page by
/// page, and only those whose names match.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_locks_walks_every_lock_page_by_page() {
    let server = Server::shared();
    let client = blocking_client(&server, 0).await;
    let mut guards = Vec::new();
    for i in 0..250 {
        guards.push(client.lock(format!("jobs:{i}")).lock().await.unwrap());
    }
    let fair = client.fair_lock("queues:a").lock().await.unwrap();
    let mut admin = common::admin(&server).await;
    let _: () = admin.set("jobs:not-a-lock", "x").await.unwrap();
    let mut listing = client.list_locks(Some("jobs:*"));
    let mut seen = std::collections::HashSet::new();
    while let Some(listed) = listing.next().await {
        let listed = listed.unwrap();
        assert_eq!((listed.kind.as_str(), listed.holders), ("lock", 1));
        assert!(listed.ttl.is_some());
        seen.insert(listed.name);
    }
    assert_eq!(seen.len(), 250);
    let mut all = client.list_locks(None);
    let mut count = 0;
    while let Some(listed) = all.next().await {
        listed.unwrap();
        count += 1;
    }
    assert!(count >= 251, "{count}");
    for guard in guards {
        guard.unlock().await.unwrap();
    }
    fair.unlock().await.unwrap();
}
