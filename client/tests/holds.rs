//! Hold bookkeeping under races, cancellation, stalls and closed clients:
//! the client's count of holds follows the server's, a lost or stale guard
//! never releases a newer hold, and no call leaves an unowned hold behind.

mod common;

use common::counts::{client, hold_count, options};
use common::{admin, numsub, renewals, stall, stallable_server, KEEPING_WATCHDOG};
use rlock_client::{Client, ClientOptions, Error, RetryOptions};
use std::future::Future;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use testkit::{eventually, Server, PATIENCE};

/// A client whose watchdog keeps its leases through the suite's load
/// (see [`KEEPING_WATCHDOG`]), for the tests that watch renewals.
async fn keeping_client(server: &Server) -> Client {
    Client::connect(server.client(), options().with_watchdog_timeout(KEEPING_WATCHDOG)).await.expect("client")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_of_a_closed_client_gets_no_guard() {
    let server = Server::shared();
    let holder_client = client(&server).await;
    let holder = holder_client.lock("handover").lock_with_lease(Duration::from_secs(60)).await.unwrap();
    let closing = client(&server).await;
    let lock = closing.lock("handover");
    let waiting = {
        let lock = lock.clone();
        tokio::spawn(async move { lock.lock().await })
    };
    let channel = rlock_client::release_channel(b"handover");
    eventually!("the waiter's subscription", numsub(&server, &channel).await == 1);
    drop(closing);
    holder.unlock().await.unwrap();
    let outcome = tokio::time::timeout(PATIENCE, waiting).await.expect("the waiter returns").unwrap();
    assert!(matches!(outcome, Err(Error::ClientClosed)), "{outcome:?}");
    eventually!("no hold left by the closed client", hold_count(&server, "handover", lock.owner()).await == 0);
    assert!(matches!(lock.try_lock(Duration::ZERO, None).await, Err(Error::ClientClosed)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_fixed_reentry_keeps_the_outer_hold_renewed() {
    let server = Server::shared();
    let client = keeping_client(&server).await;
    let lock = client.lock("nested");
    let outer = lock.lock().await.unwrap();
    let inner = lock.try_lock(Duration::ZERO, Some(Duration::from_millis(300))).await.unwrap().expect("re-entered");
    assert!(lock.remaining_lease().await.unwrap().unwrap() > Duration::from_millis(300), "the re-entry cut the lease");
    inner.unlock().await.unwrap();

    // The outer hold's lease goes on being renewed, to the watchdog's
    // timeout, and never runs out (the server shows both).
    let lease = renewals(&server, "nested", 2).await;
    assert!(lease > KEEPING_WATCHDOG * 2 / 3, "renewed to the watchdog's timeout: {lease:?}");
    let other = client.lock("nested");
    assert!(
        other.try_lock(Duration::ZERO, None).await.unwrap().is_none(),
        "another owner took the lock while the outer hold was live"
    );
    assert!(!outer.is_lost());
    assert_eq!(lock.hold_count().await.unwrap(), 1);
    outer.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixed_reentry_outliving_its_lease_keeps_the_watchdog_hold() {
    let server = Server::shared();
    let client = keeping_client(&server).await;
    let lock = client.lock("nested-live");
    let outer = lock.lock().await.unwrap();
    let inner = lock.lock_with_lease(Duration::from_millis(200)).await.unwrap();
    // Renewed past the inner hold's lease, never running out.
    renewals(&server, "nested-live", 2).await;
    let other = client.lock("nested-live");
    assert!(other.try_lock(Duration::ZERO, None).await.unwrap().is_none(), "taken while held twice");
    assert!(!outer.is_lost() && !inner.is_lost());
    assert_eq!(lock.hold_count().await.unwrap(), 2);
    inner.unlock().await.unwrap();
    outer.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_guard_never_releases_a_newer_hold() {
    let server = Server::shared();
    let client = client(&server).await;
    let lock = client.lock("stale");
    let mut admin = admin(&server).await;
    for unlock_it in [true, false] {
        let stale = lock.lock().await.unwrap();
        let _: i64 = redis::cmd("DEL").arg("stale").query_async(&mut admin).await.unwrap();
        tokio::time::timeout(PATIENCE, stale.lost()).await.expect("lost after DEL");
        let current = lock.lock().await.unwrap();
        if unlock_it {
            assert!(matches!(stale.unlock().await, Err(Error::NotOwner)));
        } else {
            drop(stale);
        }
        // A drop would release in the background: give it the time to.
        let other = client.lock("stale");
        assert!(other.try_lock(Duration::from_millis(100), None).await.unwrap().is_none());
        assert_eq!(hold_count(&server, "stale", lock.owner()).await, 1);
        assert!(!current.is_lost());
        current.unlock().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reentry_after_an_unnoticed_delete_starts_a_new_hold() {
    let server = Server::shared();
    // A watchdog too slow to notice the DEL before the re-entry.
    let options = options().with_watchdog_timeout(Duration::from_secs(30));
    let client = Client::connect(server.client(), options).await.unwrap();
    let lock = client.lock("recreated");
    let first = lock.lock().await.unwrap();
    let _: i64 = redis::cmd("DEL").arg("recreated").query_async(&mut admin(&server).await).await.unwrap();
    let second = lock.lock().await.unwrap();
    assert!(first.is_lost(), "the re-entry found the first hold gone");
    assert!(matches!(first.unlock().await, Err(Error::NotOwner)));
    assert_eq!(hold_count(&server, "recreated", lock.owner()).await, 1);
    assert!(!second.is_lost());
    second.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_during_a_stall_is_not_sent_twice() {
    let server = stallable_server();
    let client = client(&server).await;
    let lock = client.lock("stalled");
    let stalled = stall(&server, 1.0).await;
    let guard = lock.lock().await.expect("granted once the server is back");
    stalled.await.unwrap();
    assert_eq!(lock.hold_count().await.unwrap(), 1, "the acquire was applied twice");
    guard.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap(), "a hold was left behind");
}

/// A grant the client gave up on its own clock (sent during a stall, its
/// lease counted from the send had run out by the reply) may still be on
/// the server, whose lease runs from the grant: the next acquire re-enters
/// it, reads the count and gives the forgotten level back, so the hold
/// count stays one per guard and an unlock frees the lock (it stayed held
/// by nobody for the new lease).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_level_given_up_on_the_clients_clock_is_given_back_by_the_next_acquire() {
    let server = stallable_server();
    let client = client(&server).await;
    let lock = client.lock("given-up");
    let stalled = stall(&server, 0.5).await;
    let given_up = lock.lock_with_lease(Duration::from_millis(100)).await.unwrap();
    stalled.await.unwrap();
    // Its lease, counted from the send, ran out during the stall (the
    // signal is set by a task of its own: read at once it raced).
    tokio::time::timeout(PATIENCE, given_up.lost()).await.expect("its lease, counted from the send, ran out");
    let current = lock.try_lock(Duration::ZERO, Some(Duration::from_secs(10))).await.unwrap().expect("re-entered");
    // Given back after the guard is handed over, before this lock's next call.
    eventually!("the level given up was given back", hold_count(&server, "given-up", lock.owner()).await == 1);
    assert!(!current.is_lost());
    current.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap(), "a forgotten level kept the lock");

    // The same with every handle on that owner dropped in between: the
    // client still remembers the level for the owner's next acquire.
    {
        let lock = client.owned_by("worker-1").lock("given-up");
        let stalled = stall(&server, 0.5).await;
        let given_up = lock.lock_with_lease(Duration::from_millis(100)).await.unwrap();
        stalled.await.unwrap();
        tokio::time::timeout(PATIENCE, given_up.lost()).await.expect("its lease ran out during the stall");
    }
    let lock = client.owned_by("worker-1").lock("given-up");
    let current = lock.try_lock(Duration::ZERO, Some(Duration::from_secs(10))).await.unwrap().expect("re-entered");
    eventually!("the level given up was given back", hold_count(&server, "given-up", b"worker-1").await == 1);
    current.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap(), "a forgotten level kept the lock");
}

/// A plain re-entry sent while the holds it counts are gone from the
/// server (deleted unnoticed: a long watchdog period), whose reply is
/// lost to a stall: the resends are refused as `STALEHOLDS`, the holds end
/// as lost, and, as docs/client.md says, the acquire is asked again from
/// the owner's count: the lock is free, so even a try with no wait takes
/// it (it answered "taken" instead).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resend_refused_as_stale_asks_again_from_the_owners_count() {
    let server = stallable_server();
    let options = options().with_watchdog_timeout(Duration::from_secs(60));
    let client = Client::connect(server.client(), options).await.unwrap();
    let lock = client.lock("stale-resend");
    let outer = lock.lock().await.unwrap();
    let _: i64 = redis::cmd("DEL").arg("stale-resend").query_async(&mut admin(&server).await).await.unwrap();
    // The first send waits out the stall, past the reply timeout (500 ms).
    let stalled = stall(&server, 1.0).await;
    let got = lock.try_lock(Duration::ZERO, None).await.unwrap();
    stalled.await.unwrap();
    assert!(outer.is_lost(), "the deleted hold is not reported lost");
    let guard = got.expect("the lock is free, yet the try answered that it stayed taken");
    assert!(!guard.is_lost());
    assert_eq!(hold_count(&server, "stale-resend", lock.owner()).await, 1);
    guard.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap(), "a level was left behind");
}

/// A release the server undid (a failover to a replica it had not reached,
/// a restart from an AOF that lost its last second; written back here by
/// hand with 300 ms of lease left) leaves one level more than the client
/// counts: its next acquire, `HOLDS 0`, is answered as a replay, with that
/// level's lease as it stands. The guard, a watchdog hold, was reported
/// lost when those 300 ms ended, no renewal tried (a round comes every
/// 667 ms), on a lock nobody else held; an acquire named by id gets the
/// lease it asks for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_acquire_answered_as_a_replay_gets_the_lease_it_asked_for() {
    let server = Server::shared();
    let client = keeping_client(&server).await;
    let lock = client.lock("undone-release");
    lock.lock().await.unwrap().unlock().await.unwrap();
    let mut admin = admin(&server).await;
    let _: () =
        redis::cmd("HSET").arg("undone-release").arg(lock.owner()).arg(1).query_async(&mut admin).await.unwrap();
    let _: () = redis::cmd("PEXPIRE").arg("undone-release").arg(300).query_async(&mut admin).await.unwrap();
    let guard = lock.try_lock(Duration::ZERO, None).await.unwrap().expect("granted");
    // Past the replayed level's 300 ms, the lease goes on being renewed.
    renewals(&server, "undone-release", 1).await;
    assert!(!guard.is_lost(), "a watchdog hold lost at the replayed level's lease end");
    assert_eq!(hold_count(&server, "undone-release", lock.owner()).await, 1);
    guard.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap());
}

/// A lock-delay (docs/safety.md) refuses even a holder's re-entry, with
/// the delay's rest as contention would be; the holds the server has stay
/// and renew. The client took the refusal for another owner's hold: it
/// ended the outer hold as lost, stopped renewing it, and the lock expired.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reentry_refused_by_a_lock_delay_keeps_the_outer_hold() {
    let server = Server::start();
    let client = keeping_client(&server).await;
    let lock = client.lock("delayed");
    let outer = lock.lock().await.unwrap();
    let mut admin = admin(&server).await;
    let delay = |ms: i64| redis::cmd("CONFIG").arg("SET").arg("rlock.lock-delay-ms").arg(ms).clone();
    // The term began at the server's start: the delay lasts from there.
    let _: () = delay(600_000).query_async(&mut admin).await.unwrap();
    assert!(lock.try_lock(Duration::ZERO, None).await.unwrap().is_none(), "no re-entry in the delay");
    // The outer hold goes on being renewed (the lease would otherwise run out).
    renewals(&server, "delayed", 2).await;
    assert!(!outer.is_lost(), "the outer hold, still the server's, was ended as lost");
    assert_eq!(hold_count(&server, "delayed", lock.owner()).await, 1, "the outer hold was not renewed");
    let _: () = delay(0).query_async(&mut admin).await.unwrap();
    outer.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap());
}

/// A level given up on the client's clock (its lease, counted from the
/// send, ended during a stall) is still on the server. Named by the
/// owner's count (`HOLDS 0`), the next acquire would find 1 and be
/// answered as a replay of that level, with its lease as it stands (the
/// short reply would not even say so). So after a level is given up the
/// client names its acquires by id until a reply shows the count again:
/// the acquire runs, a re-entry with the lease asked for, and the level
/// left behind is given back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_after_a_level_given_up_gets_the_lease_it_asked_for() {
    let server = stallable_server();
    // Replies wait out the stall (no resend), and no watchdog round (10 s)
    // checks the hold before the end of this test.
    let patient = options().with_watchdog_timeout(Duration::from_secs(30)).with_reply_timeout(Duration::from_secs(5));
    let client = Client::connect(server.client(), patient).await.unwrap();
    let lock = client.lock("replayed-lease");
    let stalled = stall(&server, 0.8).await;
    let given_up = lock.lock_with_lease(Duration::from_millis(300)).await.unwrap();
    stalled.await.unwrap();
    tokio::time::timeout(PATIENCE, given_up.lost()).await.expect("its lease, counted from the send, ran out");
    assert_eq!(hold_count(&server, "replayed-lease", lock.owner()).await, 1, "the server still counts the level");

    let current = lock.try_lock(Duration::ZERO, Some(Duration::from_secs(10))).await.unwrap().expect("granted");
    eventually!("the level left behind given back", hold_count(&server, "replayed-lease", lock.owner()).await == 1);
    let pttl: i64 = redis::cmd("PTTL").arg("replayed-lease").query_async(&mut admin(&server).await).await.unwrap();
    assert!(pttl > 5_000, "the lease asked for (10 s) is the lock's: PTTL {pttl}");
    assert!(!current.is_lost());
    current.unlock().await.unwrap();
    assert_eq!(hold_count(&server, "replayed-lease", lock.owner()).await, 0);
}

/// Two clients sharing an owner id (`shared_owner_ids`): a level one of
/// them gave up because its lease ran out is not taken for the other
/// client's levels at its next acquire; without the option, an owner id is
/// one client's alone, and levels beyond its count are given back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_shared_owner_ids_a_client_never_gives_back_another_clients_level() {
    let server = Server::shared();
    let connect = || Client::connect(server.client(), options().with_shared_owner_ids(true));
    let (a, b) = (connect().await.unwrap(), connect().await.unwrap());
    let (on_a, on_b) = (a.owned_by("o").lock("shared"), b.owned_by("o").lock("shared"));
    let ran_out = on_a.lock_with_lease(Duration::from_millis(100)).await.unwrap();
    tokio::time::timeout(PATIENCE, ran_out.lost()).await.expect("reported lost at its lease's end");
    eventually!("the key expired", !on_a.is_locked().await.unwrap());
    let (b1, b2) = (on_b.lock().await.unwrap(), on_b.lock().await.unwrap());
    let a1 = on_a.lock().await.unwrap();
    assert_eq!(hold_count(&server, "shared", b"o").await, 3, "a level of the other client was given back");
    for guard in [a1, b1, b2] {
        guard.unlock().await.unwrap();
    }
    assert!(!on_a.is_locked().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_during_a_stall_is_applied_once() {
    let server = stallable_server();
    // A lease that outlasts the stall: only the release is in question.
    let options = options().with_watchdog_timeout(Duration::from_secs(30));
    let client = Client::connect(server.client(), options).await.unwrap();
    let lock = client.lock("stalled-release");
    let outer = lock.lock().await.unwrap();
    let inner = lock.lock().await.unwrap();
    let stalled = stall(&server, 1.0).await;
    inner.unlock().await.expect("released once the server is back");
    stalled.await.unwrap();
    assert_eq!(lock.hold_count().await.unwrap(), 1, "the release was applied twice");
    assert!(!outer.is_lost());
    outer.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_force_unlock_whose_reply_was_lost_is_not_sent_again() {
    let server = stallable_server();
    // Retries far enough apart that a resend would come after the stall.
    let options = options().with_retry(RetryOptions::new(3, Duration::from_millis(800)));
    let client = Client::connect(server.client(), options).await.unwrap();
    let stalled = stall(&server, 1.0).await;
    let forcing = {
        let lock = client.lock("forced");
        tokio::spawn(async move { lock.force_unlock().await })
    };
    stalled.await.unwrap();
    // Someone takes the lock once the server is back.
    let mut taker = admin(&server).await;
    let taken: Option<i64> =
        redis::cmd("RLOCK.ACQUIRE").arg("forced").arg("taker").arg(60_000).query_async(&mut taker).await.unwrap();
    assert_eq!(taken, None);
    let _ = forcing.await.unwrap();
    assert_eq!(hold_count(&server, "forced", b"taker").await, 1, "a resent FORCERELEASE deleted the new holder");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlock_racing_lock_on_one_handle_keeps_the_new_hold() {
    let server = Server::shared();
    let client = keeping_client(&server).await;
    let lock = client.lock("racing");
    let mut guard = lock.lock().await.unwrap();
    for round in 0..300 {
        let (unlocked, relocked) = tokio::join!(guard.unlock(), lock.lock());
        unlocked.unwrap();
        guard = relocked.unwrap();
        assert!(!guard.is_lost(), "round {round}: the new guard is reported lost");
        assert_eq!(hold_count(&server, "racing", lock.owner()).await, 1, "round {round}");
    }
    renewals(&server, "racing", 2).await;
    let other = client.lock("racing");
    assert!(other.try_lock(Duration::ZERO, None).await.unwrap().is_none(), "the last hold was not renewed");
    assert!(!guard.is_lost());
    guard.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zero_watchdog_timeout_is_refused_when_the_client_is_built() {
    let server = Server::shared();
    for timeout in [Duration::ZERO, Duration::from_micros(500), rlock_client::MAX_LEASE * 2] {
        let options = ClientOptions::default().with_watchdog_timeout(timeout);
        let built = Client::connect(server.client(), options).await;
        assert!(matches!(built, Err(Error::InvalidWatchdogTimeout(_))), "{timeout:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_granted_lock_whose_caller_is_gone_is_given_back() {
    let server = Server::shared();
    let client = client(&server).await;
    let lock = client.lock("orphan");
    let mut orphaned = 0;
    'attempts: for _ in 0..20 {
        // Poll (the attempt runs in this task) until the server granted it,
        // then drop the future before it takes the reply.
        let mut locking = Box::pin(lock.lock_with_lease(Duration::from_secs(60)));
        let mut cx = Context::from_waker(Waker::noop());
        let deadline = std::time::Instant::now() + PATIENCE;
        while hold_count(&server, "orphan", lock.owner()).await != 1 {
            assert!(std::time::Instant::now() < deadline, "the acquire never ran");
            if let Poll::Ready(guard) = locking.as_mut().poll(&mut cx) {
                // The reply came in the same poll as the request went out.
                guard.unwrap().unlock().await.unwrap();
                continue 'attempts;
            }
            // The poll interval: the future is polled by hand with a no-op waker, so nothing wakes this loop.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        drop(locking);
        eventually!("the grant to be given back", !lock.is_locked().await.unwrap());
        orphaned += 1;
    }
    assert!(orphaned >= 10, "only {orphaned} of 20 attempts were still pending when granted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acquire_through_a_long_pause_leaves_exactly_one_hold() {
    let server = Server::shared();
    let client = client(&server).await;
    let lock = client.lock("paused");
    server.pause();
    let locking = {
        let lock = lock.clone();
        tokio::spawn(async move { lock.lock().await })
    };
    // Longer than every retry of the acquire and of the reads settling it
    // (a stopped server shows nothing to wait for).
    tokio::time::sleep(Duration::from_secs(5)).await;
    server.resume();
    let guard = tokio::time::timeout(PATIENCE, locking).await.expect("lock() returns").unwrap().expect("granted");
    assert_eq!(lock.hold_count().await.unwrap(), 1, "a queued acquire was left as an extra hold");
    guard.unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap(), "a hold was left behind");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixed_lease_far_shorter_than_the_renewal_period_is_reported_lost_at_its_end() {
    let server = Server::shared();
    // A round only every 10 s: the end of a 300 ms lease must not wait for it.
    let options = options().with_watchdog_timeout(Duration::from_secs(30));
    let client = Client::connect(server.client(), options).await.unwrap();
    let lock = client.lock("short");
    let guard = lock.lock_with_lease(Duration::from_millis(300)).await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), guard.lost()).await.expect("lost long before the next round");
    assert!(matches!(guard.unlock().await, Err(Error::NotOwner)));
}

/// On a single thread the watchdog's task cannot run between the drop and
/// the checks: the guard must be lost by the drop itself, not once that
/// task notices it (the model test unlocked such a guard in that window
/// and saw `Ok`, a release sent for a client already gone).
#[tokio::test(flavor = "current_thread")]
async fn a_guard_is_lost_as_soon_as_its_client_is_dropped() {
    let server = Server::shared();
    let client = client(&server).await;
    let lock = client.lock("closing");
    let guard = lock.lock().await.unwrap();
    drop(client);
    assert!(guard.is_lost(), "the guard of a dropped client looks held");
    assert!(matches!(guard.unlock().await, Err(Error::ClientClosed)));
    assert_eq!(hold_count(&server, "closing", lock.owner()).await, 1, "a lost guard's unlock released");
}
