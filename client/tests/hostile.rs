//! What a hostile user tried: odd options, ACL users, futures dropped
//! outside the runtime, retries held up past the unlock latch, a force
//! unlock racing a grant. Each test states what the README promises.

mod common;

use common::{admin, pause_all, stall, stallable_server};
use rlock_client::{Client, ClientOptions, Error, ReplicaSync, RetryOptions};
use std::future::Future;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use testkit::{eventually, Server};

fn options() -> ClientOptions {
    ClientOptions::default().with_watchdog_timeout(Duration::from_millis(600)).with_replica_sync(ReplicaSync::Off)
}

async fn numsub(server: &Server, name: &[u8]) -> i64 {
    common::numsub(server, &rlock_client::release_channel(name)).await
}

/// `try_lock(Duration::MAX, ..)` ("wait as long as it takes") must not panic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn try_lock_with_an_endless_wait_does_not_panic() {
    let server = Server::shared();
    let client = Client::connect(server.client(), options()).await.unwrap();
    let lock = client.lock("endless-wait");
    let outcome =
        tokio::spawn(async move { lock.try_lock(Duration::MAX, None).await.map(|guard| guard.is_some()) }).await;
    assert!(matches!(outcome, Ok(Ok(true))), "try_lock(Duration::MAX) panicked or failed: {outcome:?}");
}

/// An odd retry delay must not make `unlock` fail and leave the lock held
/// (and renewed by the watchdog) for the life of the client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlock_with_a_huge_retry_delay_releases_the_lock() {
    let server = Server::shared();
    let options = options().with_retry(RetryOptions::new(3, Duration::MAX));
    let client = Client::connect(server.client(), options).await.unwrap();
    let lock = client.lock("huge-delay");
    let guard = lock.lock().await.unwrap();
    let unlocked = guard.unlock().await;
    assert!(unlocked.is_ok(), "unlock failed: {unlocked:?}");
    assert!(!lock.is_locked().await.unwrap(), "the lock is still held after unlock");
}

/// An ACL user whose key patterns cover its locks (and who could release
/// them before issue 8) must still be able to unlock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acl_user_limited_to_its_lock_keys_can_unlock() {
    let server = Server::shared();
    let _: () = redis::cmd("ACL")
        .arg(&["SETUSER", "limited", "on", ">pw", "~locks:*", "allchannels", "+@all"])
        .query_async(&mut admin(&server).await)
        .await
        .unwrap();
    let url = format!("redis://limited:pw@127.0.0.1:{}/", server.port());
    let client = Client::connect(redis::Client::open(url).unwrap(), options()).await.unwrap();
    let lock = client.lock("locks:acl");
    let guard = lock.lock().await.unwrap();
    // A waiter cannot be named (no acquire record keys): it waits by pub/sub.
    let waiter = client.lock("locks:acl");
    let waiting = tokio::spawn(async move { waiter.lock().await });
    eventually!("the waiter subscribed", numsub(&server, b"locks:acl").await == 1);
    let unlocked = guard.unlock().await;
    assert!(unlocked.is_ok(), "unlock failed: {unlocked:?}");
    waiting.await.unwrap().expect("the waiter takes the lock").unlock().await.unwrap();
    assert!(!lock.is_locked().await.unwrap(), "the lock is still held after unlock");
}

/// A waiting `lock()` future dropped on a thread outside the runtime (a
/// plain `Send` future may be) leaves no subscription behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_dropped_outside_the_runtime_leaves_no_subscription() {
    let server = Server::shared();
    let holder_client = Client::connect(server.client(), options()).await.unwrap();
    let holder = holder_client.lock("off-runtime").lock_with_lease(Duration::from_secs(60)).await.unwrap();
    let client = Client::connect(server.client(), options()).await.unwrap();
    let lock = client.lock("off-runtime");
    let mut waiting = Box::pin(async move { lock.lock().await });
    let mut cx = Context::from_waker(Waker::noop());
    eventually!("the waiter's subscription", {
        assert!(matches!(waiting.as_mut().poll(&mut cx), Poll::Pending));
        numsub(&server, b"off-runtime").await == 1
    });
    std::thread::spawn(move || drop(waiting)).join().unwrap();
    eventually!("the subscription to go", numsub(&server, b"off-runtime").await == 0);
    holder.unlock().await.unwrap();
}

/// A release whose first attempt ran (its reply late) and whose retry is
/// held up by a second stall longer than the latch's lifetime: the retry
/// must still answer from the latch, not release a second level.
///
/// Timeline (t0 = unlock sent, redis-rs response timeout 0.5 s, retry
/// delay 1 s, so a retry window of (1 s + 1 s) * 4 = 8 s): stall 1 until
/// t0+1.0 (attempt 1 times out at t0+0.5, runs at t0+1.0); stall 2 from
/// t0+1.2 for 10 s; retry 1, sent at t0+1.5, runs at t0+11.2. A latch that
/// lived only the retry window would be gone by then, and the retry would
/// release the outer hold too; it also covers the lease the release set.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_release_held_up_past_the_latch_lifetime_drops_no_second_level() {
    let server = stallable_server();
    let options = options()
        .with_watchdog_timeout(Duration::from_secs(60))
        .with_retry(RetryOptions::new(3, Duration::from_secs(1)));
    let client = Client::connect(server.client(), options).await.unwrap();
    let lock = client.lock("late-retry");
    let outer = lock.lock().await.unwrap();
    let inner = lock.lock().await.unwrap();
    let first_stall = stall(&server, 1.05).await;
    let started = tokio::time::Instant::now();
    let unlocking = tokio::spawn(inner.unlock());
    tokio::time::sleep_until(started + Duration::from_millis(1200)).await;
    first_stall.await.unwrap();
    let second_stall = stall(&server, 10.0).await;
    let unlocked = unlocking.await.unwrap();
    assert!(unlocked.is_err(), "every attempt timed out: {unlocked:?}");
    second_stall.await.unwrap();
    let mut admin = admin(&server).await;
    let count: Option<i64> =
        redis::cmd("HGET").arg("late-retry").arg(lock.owner()).query_async(&mut admin).await.unwrap();
    assert_eq!(count, Some(1), "the retried release dropped the outer hold as well");
    assert!(!outer.is_lost());
}

/// A force unlock and an acquire racing in one client: when the acquire ran
/// after the force release on the server, its guard holds the lock and
/// must not be reported lost (a lost guard never releases, so the lock
/// would stay taken until its lease ends).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_after_a_racing_force_unlock_is_not_reported_lost() {
    let server = Server::shared();
    // 300 rounds: a reply slower than redis-rs's 500 ms under the suite's
    // load is no part of the race.
    let options = options().with_reply_timeout(testkit::PATIENCE);
    let client = Client::connect(server.client(), options).await.unwrap();
    let forcer = client.lock("forced-race");
    let taker = client.lock("forced-race");
    let mut admin = admin(&server).await;
    for round in 0..300 {
        let _: Option<i64> = redis::cmd("RLOCK.ACQUIRE")
            .arg("forced-race")
            .arg("someone")
            .arg(60_000)
            .query_async(&mut admin)
            .await
            .unwrap();
        let (forced, taken) = tokio::join!(forcer.force_unlock(), taker.try_lock(Duration::ZERO, None));
        assert!(forced.unwrap(), "round {round}: the force release ran first");
        let Some(guard) = taken.unwrap() else { continue };
        let held: Option<i64> =
            redis::cmd("HGET").arg("forced-race").arg(taker.owner()).query_async(&mut admin).await.unwrap();
        assert_eq!(held, Some(1), "round {round}");
        assert!(!guard.is_lost(), "round {round}: a guard that holds the lock is reported lost");
        guard.unlock().await.unwrap();
    }
}

/// `ReplicaSync::Replicas { timeout: 0 }` ("do not block") would hang: Redis
/// reads `WAIT n 0` as "block for ever", so with too few replicas the
/// acquire would never complete. Such a timeout is refused up front, as is
/// a watchdog timeout whose renewal period would be 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_that_would_hang_or_spin_are_refused_when_the_client_is_built() {
    let server = Server::shared();
    for timeout in [Duration::ZERO, Duration::from_micros(999)] {
        for sync in [ReplicaSync::Replicas { count: 1, timeout }, ReplicaSync::AllReplicas { timeout }] {
            let built = Client::connect(server.client(), options().with_replica_sync(sync)).await;
            assert!(matches!(built, Err(Error::InvalidReplicaSyncTimeout(_))), "{sync:?}");
        }
    }
    let spinning = options().with_watchdog_timeout(Duration::from_millis(2));
    assert!(matches!(Client::connect(server.client(), spinning).await, Err(Error::InvalidWatchdogTimeout(_))));
}

/// The reply timeout is the client's to set: a force unlock (never sent
/// again on a timeout) during a 1 s pause of every client fails at
/// redis-rs's 500 ms by default, and waits the pause out with a 5 s one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reply_timeout_is_the_clients_to_set() {
    let server = Server::shared();
    for (options, waits_it_out) in [(options(), false), (options().with_reply_timeout(Duration::from_secs(5)), true)] {
        let client = Client::connect(server.client(), options).await.unwrap();
        let lock = client.lock("reply-timeout");
        lock.lock().await.unwrap().unlock().await.unwrap();
        pause_all(&server, 1.0).await;
        let forced = lock.force_unlock().await;
        assert_eq!(forced.is_ok(), waits_it_out, "{forced:?}");
        let pong: redis::RedisResult<String> = redis::cmd("PING").query_async(&mut admin(&server).await).await;
        assert!(pong.is_ok(), "the pause waited out: {pong:?}");
    }
}

/// A fair or read-write release sent while every client's commands are
/// paused past the reply timeout (`CLIENT PAUSE … ALL`): it times out, is
/// sent again under its request id behind the first, and the two together
/// drop one level (the latch answers the second); the outer hold lives on
/// and its release frees the lock. A reader's release that leaves a hold
/// is preceded by a renewal of its keys, retried through the pause too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fair_or_read_write_release_through_a_pause_drops_one_level() {
    let server = Server::start();
    // Replies wait 200 ms, and the pause lasts 600: the first send times out.
    let options =
        options().with_watchdog_timeout(Duration::from_secs(60)).with_reply_timeout(Duration::from_millis(200));
    let client = Client::connect(server.client(), options).await.unwrap();
    let rw = client.read_write_lock("paused:rw");
    for lock in [client.fair_lock("paused:fair"), rw.read(), rw.write()] {
        let (kind, name) = (lock.kind(), String::from_utf8(lock.name().to_vec()).unwrap());
        let outer = lock.lock().await.unwrap();
        let inner = lock.lock().await.unwrap();
        // A reader's renewal, sent first, meets the pause in its place.
        let commands: &[&str] = match kind {
            rlock_client::Kind::Fair => &["rfair.release"],
            rlock_client::Kind::Read => &["rrw.renew", "rrw.release"],
            _ => &["rrw.release"],
        };
        let runs = || commands.iter().map(|command| testkit::calls(&mut server.connection(), command)).sum::<u64>();
        let before = runs();
        pause_all(&server, 0.6).await;
        inner.unlock().await.expect("released once the pause ends");
        let sent = runs() - before;
        assert!(sent >= 3 || kind != rlock_client::Kind::Read && sent >= 2, "{kind:?}: {sent} runs: no resend to test");
        assert_eq!(lock.hold_count().await.unwrap(), 1, "{kind:?}: the levels left");
        assert!(!outer.is_lost(), "{kind:?}");
        outer.unlock().await.unwrap();
        let exists: i64 = redis::cmd("EXISTS").arg(&name).query_async(&mut admin(&server).await).await.unwrap();
        assert_eq!(exists, 0, "{kind:?}: the lock left after the last unlock");
    }
}
