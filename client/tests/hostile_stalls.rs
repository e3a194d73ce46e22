//! Hostile use of the inline request path against stalled, killed and
//! restarted servers, and of the blocking waiting mode and the
//! semaphores' takes: calls cut at random points leave nothing behind.

mod common;

use common::hostile::*;
use common::{admin, info, pause_all, stall, stallable_server};
use rlock_client::{ClientOptions, Error, RetryOptions};
use std::task::Poll;
use std::time::Duration;
use testkit::{eventually, Server};

// ---------------------------------------------------------------------
// Server stalls, kills, restarts
// ---------------------------------------------------------------------

/// A watchdog lease longer than any wait below for a key to be freed (up
/// to 15 s), and than a stall of this process: the tests that hold a lock
/// and then look for holds left behind run on it. A hold nobody tracks (a
/// grant the client failed to give back) then outlasts the wait and fails
/// it, instead of running out unseen, and a tracked hold outlives a loaded
/// machine's stall: a 600 ms lease ran out while this process got no CPU
/// for about a second, before the watchdog's next round, and the holder's
/// unlock met NotOwner (or a waiter was granted beside it).
const HOLDING_WATCHDOG: Duration = Duration::from_secs(30);

fn holding_options() -> ClientOptions {
    options().with_watchdog_timeout(HOLDING_WATCHDOG)
}

/// A SIGSTOPped server under acquires and releases cancelled by timeouts;
/// after it resumes every hold the client does not track is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_cancelled_while_the_server_is_stopped_leave_no_untracked_hold() {
    let server = Server::shared();
    let client = client(&server, holding_options()).await;
    let lock = client.lock("stopped");
    let outer = lock.lock().await.unwrap();
    server.pause();
    let mut cut = Vec::new();
    for i in 0..6 {
        let lock = lock.clone();
        cut.push(tokio::spawn(async move {
            let _ = tokio::time::timeout(Duration::from_millis(50 + 40 * i), lock.lock()).await;
        }));
    }
    let unlocking = tokio::spawn(tokio::time::timeout(Duration::from_millis(100), outer.unlock()));
    for task in cut {
        task.await.unwrap();
    }
    let _ = unlocking.await;
    // Stopped a while: a stopped server shows nothing to wait for.
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.resume();
    eventually!("the key freed", Duration::from_secs(15), !exists(&server, "stopped").await);
    // Usable again.
    let guard = lock.lock().await.unwrap();
    guard.unlock().await.unwrap();
    assert!(!exists(&server, "stopped").await);
}

/// DEBUG SLEEP under a re-entered hold: the client's count and the
/// server's agree afterwards; no hold is doubled or forgotten.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stall_under_racing_reentries_keeps_counts_in_step() {
    let server = stallable_server();
    let client = client(&server, options().with_watchdog_timeout(Duration::from_secs(5))).await;
    let lock = client.lock("stalled");
    let outer = lock.lock().await.unwrap();
    let stalled = stall(&server, 1.5).await;
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let lock = lock.clone();
            tokio::spawn(async move { lock.try_lock(Duration::from_millis(300), None).await })
        })
        .collect();
    let mut guards = Vec::new();
    for task in tasks {
        if let Ok(Some(guard)) = task.await.unwrap() {
            guards.push(guard);
        }
    }
    stalled.await.unwrap();
    let expected = 1 + guards.len() as i64;
    eventually!("the server's count matches the guards", {
        count_of(&server, "stalled", lock.owner()).await == Some(expected)
    });
    drop(guards);
    outer.unlock().await.unwrap();
    eventually!("the key freed", !exists(&server, "stalled").await);
}

/// An acquire whose reply comes after the response timeout (a stall) is
/// sent again under its request id, never blindly: the server replays the
/// first grant, counts one level for the one guard, and the record goes
/// once the outcome is in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_acquire_reply_is_resent_under_its_id_and_granted_once() {
    let server = stallable_server();
    let client = client(&server, holding_options()).await;
    let lock = client.lock("resent");
    let stalled = stall(&server, 1.5).await;
    let guard = lock.lock().await.unwrap();
    stalled.await.unwrap();
    assert_eq!(count_of(&server, "resent", lock.owner()).await, Some(1), "one level for one guard");
    let stats: String = redis::cmd("INFO").arg("commandstats").query_async(&mut admin(&server).await).await.unwrap();
    let acquires = stats.lines().find_map(|line| line.strip_prefix("cmdstat_rlock.acquire:calls="));
    let acquires: i64 = acquires.and_then(|rest| rest.split(',').next()).unwrap().parse().unwrap();
    assert!(acquires >= 2, "sent, then resent: {acquires} acquires");
    eventually!("the record deleted", record_keys(&server).await == 0);
    guard.unlock().await.unwrap();
    assert!(!exists(&server, "resent").await);
}

/// An acquire whose caller gave up during a stall (no retries left) goes
/// on in the background under its request id; the grant it finds once the
/// server answers is recorded like any other, and its hold, which nobody
/// takes, is released: a first acquire leaves the lock free, a re-entry
/// leaves the outer hold alone and not lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_found_after_its_caller_gave_up_is_given_back() {
    let server = stallable_server();
    // Leases that outlast the stall: only the grants are in question.
    let options = options().with_retry(RetryOptions::new(0, Duration::from_millis(10)));
    let client = client(&server, options.with_watchdog_timeout(Duration::from_secs(30))).await;
    let (first, reentered) = (client.lock("abandoned"), client.lock("abandoned-reentry"));
    let outer = reentered.lock().await.unwrap();
    // Paused, not slept: a DEBUG SLEEP on a connection of its own can be
    // overtaken by the acquires below, which are then granted in time.
    pause_all(&server, 1.5).await;
    let (lost_first, lost_reentry) = tokio::join!(first.lock(), reentered.lock());
    assert!(lost_first.is_err() && lost_reentry.is_err(), "{lost_first:?} {lost_reentry:?}");
    eventually!("the first grant given back", !exists(&server, "abandoned").await);
    eventually!("the re-entry given back", {
        count_of(&server, "abandoned-reentry", reentered.owner()).await == Some(1)
    });
    eventually!("the records deleted", record_keys(&server).await == 0);
    assert!(!outer.is_lost(), "the outer hold stands");
    outer.unlock().await.unwrap();
    assert!(!exists(&server, "abandoned-reentry").await);
    first.lock().await.unwrap().unlock().await.unwrap();
}

/// A restart (no persistence): the server lost the hold, so lost() fires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_that_loses_the_hold_fires_lost() {
    let mut server = Server::start();
    let client = client(&server, options()).await;
    let guard = client.lock("restarted").lock().await.unwrap();
    let fixed = client.lock("restarted-fixed").lock_with_lease(Duration::from_secs(60)).await.unwrap();
    server.restart();
    let lost = tokio::time::timeout(Duration::from_secs(5), guard.lost()).await;
    assert!(lost.is_ok(), "the watchdog hold was lost in a restart but lost() did not fire");
    let lost = tokio::time::timeout(Duration::from_secs(5), fixed.lost()).await;
    assert!(lost.is_ok(), "the fixed hold was lost in a restart but lost() did not fire");
    assert!(matches!(guard.unlock().await, Err(Error::NotOwner)));
}

// ---------------------------------------------------------------------
// Blocking waiting mode
// ---------------------------------------------------------------------

fn blocking_options() -> ClientOptions {
    holding_options().with_blocking_connections(4)
}

/// A blocked `try_lock` whose limit passes while the server is stopped
/// returns on time, and after the server resumes the given-up wait holds
/// nothing; the lock goes to nobody when its holder releases.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_wait_given_up_on_a_stopped_server_returns_on_time_and_holds_nothing() {
    let server = Server::shared();
    let holder_client = client(&server, options()).await;
    let holder = holder_client.lock("blk-stop").lock_with_lease(Duration::from_secs(60)).await.unwrap();
    let client = client(&server, blocking_options()).await;
    let lock = client.lock("blk-stop");
    let waiting = {
        let lock = lock.clone();
        tokio::spawn(async move {
            let started = tokio::time::Instant::now();
            let got = lock.try_lock(Duration::from_millis(800), None).await;
            (got.map(|g| g.is_some()), started.elapsed())
        })
    };
    eventually!("it blocked", info(&server, "blocked").await == 1);
    server.pause();
    let (got, took) = waiting.await.unwrap();
    server.resume();
    assert!(matches!(got, Ok(false) | Err(_)), "{got:?}");
    assert!(took < Duration::from_millis(1500), "try_lock(800 ms) took {took:?} on a stopped server");
    eventually!("the server unblocked it", info(&server, "blocked").await == 0);
    holder.unlock().await.unwrap();
    eventually!("nobody holds the lock", !exists(&server, "blk-stop").await);
    // Still usable.
    lock.try_lock(Duration::from_secs(2), None).await.unwrap().unwrap().unlock().await.unwrap();
}

/// README: "Once the last Client clone is dropped, waiting calls return
/// Error::ClientClosed at once". A waiter blocked on the server must too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_waiter_returns_client_closed_when_the_client_is_dropped() {
    let server = Server::shared();
    let holder_client = client(&server, options()).await;
    let holder = holder_client.lock("blk-close").lock_with_lease(Duration::from_secs(60)).await.unwrap();
    let client = client(&server, blocking_options()).await;
    let lock = client.lock("blk-close");
    let waiting = tokio::spawn(async move { lock.lock().await.map(|_| ()) });
    eventually!("it blocked", info(&server, "blocked").await == 1);
    drop(client);
    let outcome = tokio::time::timeout(Duration::from_secs(3), waiting).await;
    assert!(
        matches!(outcome, Ok(Ok(Err(Error::ClientClosed)))),
        "a blocked waiter did not return ClientClosed within 3 s of the client's drop: {outcome:?}"
    );
    holder.unlock().await.unwrap();
    eventually!("nobody holds the lock", !exists(&server, "blk-close").await);
}

/// Blocked waiters polled once then dropped, parked, and cut by timeouts,
/// while the holder hands the lock on: every grant ends with a holder that
/// knows it, and the key ends free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocked_waiters_cut_at_random_points_leave_no_untracked_grant() {
    let server = Server::shared();
    let client = client(&server, blocking_options()).await;
    let mut rng = 0x1234_5678_u64;
    for round in 0..30 {
        let holder = client.lock("blk-cut").lock().await.unwrap();
        let waiters: Vec<_> = (0..3)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let cut = Duration::from_millis(5 + rng % 60);
                let lock = client.lock("blk-cut");
                tokio::spawn(async move { tokio::time::timeout(cut, lock.lock()).await.ok().and_then(Result::ok) })
            })
            .collect();
        // A random point to release at: the variable under test, not a wait.
        tokio::time::sleep(Duration::from_millis(rng % 40)).await;
        holder.unlock().await.unwrap();
        let mut guards = Vec::new();
        for waiter in waiters {
            guards.extend(waiter.await.unwrap());
        }
        assert!(guards.len() <= 1, "round {round}: two guards at once");
        drop(guards);
        eventually!(format!("round {round}: the key freed"), !exists(&server, "blk-cut").await);
    }
    eventually!("nothing blocked", info(&server, "blocked").await == 0);
}

/// A blocked waiter's dedicated connection breaks because the server was
/// restarted: the client retries `CLIENT KILL ID <old id>` across the
/// reconnection, and client ids restart on a new server process, so the
/// kill may hit whatever connection took that id there (another client's,
/// here a plain connection that did nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_retried_across_a_restart_hits_no_innocent_connection() {
    let mut server = Server::start();
    let options = blocking_options().with_retry(rlock_client::RetryOptions::new(5, Duration::from_secs(1)));
    let client = client(&server, options).await;
    let mut admin = admin(&server).await;
    let _: Option<i64> =
        redis::cmd("RLOCK.ACQUIRE").arg("blk-restart").arg("other").arg(60_000).query_async(&mut admin).await.unwrap();
    let waiting = {
        let lock = client.lock("blk-restart");
        tokio::spawn(async move { lock.lock().await.map(drop) })
    };
    eventually!("it blocked", info(&server, "blocked").await == 1);
    let clients: String = redis::cmd("CLIENT").arg("LIST").query_async(&mut admin).await.unwrap();
    let victim: i64 = testkit::blocked_acquire_client_id(&clients).unwrap().parse().unwrap();
    drop(admin);
    server.restart();
    // Take client ids on the new server up to the old dedicated one's.
    let mut innocent = None;
    let mut others = Vec::new();
    for _ in 0..victim + 5 {
        let mut con = server.client().get_multiplexed_async_connection_with_config(&common::patient()).await.unwrap();
        let id: i64 = redis::cmd("CLIENT").arg("ID").query_async(&mut con).await.unwrap();
        if id == victim {
            innocent = Some(con);
            break;
        }
        if id > victim {
            break;
        }
        others.push(con);
    }
    eprintln!("victim {victim}, took {} ids below it", others.len());
    let Some(mut innocent) = innocent else {
        eprintln!("inconclusive: id {victim} was taken by someone else on the new server");
        return;
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(6);
    while std::time::Instant::now() < deadline {
        let ping = redis::cmd("PING").query_async::<String>(&mut innocent).await;
        assert!(ping.is_ok(), "connection id {victim} on the restarted server was killed by the client: {ping:?}");
        // Sampling for a kill that must not come: an absence has no event.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    waiting.abort();
}

/// Semaphore and permit takes dropped after 1..N polls leave every permit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn semaphore_and_permit_takes_dropped_mid_way_lose_no_permit() {
    let server = Server::shared();
    let client = client(&server, options()).await;
    let semaphore = client.semaphore("sem-cut");
    assert!(semaphore.try_set_permits(2).await.unwrap());
    let permits = client.permit_semaphore("psem-cut");
    assert!(permits.try_set_permits(2).await.unwrap());
    for polls in 1..30 {
        let mut take = Box::pin(semaphore.acquire(1));
        let mut taken = false;
        for _ in 0..polls {
            if let Poll::Ready(done) = poll_once(take.as_mut()) {
                taken = done.is_ok();
                break;
            }
            tokio::task::yield_now().await;
        }
        drop(take);
        if taken {
            semaphore.release(1).await.unwrap();
        }
        eventually!(format!("semaphore permits back after {polls} polls"), semaphore.available().await.unwrap() == 2);

        let mut take = Box::pin(permits.acquire(Duration::from_secs(60)));
        for _ in 0..polls {
            if let Poll::Ready(permit) = poll_once(take.as_mut()) {
                drop(permit); // a permit dropped is released in the background
                break;
            }
            tokio::task::yield_now().await;
        }
        drop(take);
        eventually!(format!("permits back after {polls} polls"), permits.available().await.unwrap() == 2);
    }
}
