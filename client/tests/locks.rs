//! rlock-client against a real redis-server with the module.

mod common;

use common::{numsub, KEEPING_WATCHDOG};
use redis::AsyncCommands;
use rlock_client::{Client, ClientOptions, Error};
use std::time::{Duration, Instant};
use testkit::{eventually, RedissonScripts, Server, PATIENCE};

/// Short enough that renewal and loss show within a test.
/// A round every 667 ms: 1.3 s of slack before a lease ends, for a loaded
/// machine that runs a round late (600 ms left 400 ms, which was too little).
const WATCHDOG: Duration = Duration::from_secs(2);

async fn client(server: &Server) -> Client {
    let options = ClientOptions::default().with_watchdog_timeout(WATCHDOG);
    Client::connect(server.client(), options).await.expect("client")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reentrancy_counts_holds_through_one_handle() {
    let server = Server::shared();
    let client = client(&server).await;
    let lock = client.lock("reentrant");
    assert!(lock.owner().starts_with(client.id().to_string().as_bytes()));

    let first = lock.lock().await.unwrap();
    let second = lock.lock().await.unwrap();
    assert_eq!(lock.hold_count().await.unwrap(), 2);
    assert!(lock.is_held().await.unwrap() && lock.is_locked().await.unwrap());

    second.unlock().await.unwrap();
    assert_eq!(lock.hold_count().await.unwrap(), 1);
    assert!(!first.is_lost(), "a partial release keeps the lock");
    first.unlock().await.unwrap();
    assert_eq!(lock.hold_count().await.unwrap(), 0);
    assert!(!lock.is_locked().await.unwrap());
    assert_eq!(lock.remaining_lease().await.unwrap(), None);
}

/// A re-entry of a plain or fair lock is one command: the acquire's full
/// reply carries the count that shows the earlier levels survived (no
/// MULTI with a STATUS).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reentry_is_one_command() {
    let server = Server::shared();
    let client = client(&server).await;
    let (lock, fair, fenced) = (client.lock("once"), client.fair_lock("once-fair"), client.fenced_lock("once-fenced"));
    let rw = client.read_write_lock("once-rw");
    let (read, write) = (rw.read(), rw.write());
    let first = (lock.lock().await.unwrap(), fair.lock().await.unwrap(), fenced.lock().await.unwrap());
    let first_rw = (write.lock().await.unwrap(), read.lock().await.unwrap());
    let mut admin = common::admin(&server).await;
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query_async(&mut admin).await.unwrap();
    let second = (lock.lock().await.unwrap(), fair.lock().await.unwrap(), fenced.lock().await.unwrap());
    let second_rw = (write.lock().await.unwrap(), read.lock().await.unwrap());
    assert!(second.2.token() > first.2.token());
    let stats: String = redis::cmd("INFO").arg("commandstats").query_async(&mut admin).await.unwrap();
    let calls = |command: &str| -> Vec<String> {
        let prefix = format!("cmdstat_{command}:calls=");
        stats
            .lines()
            .filter_map(|line| line.strip_prefix(&prefix))
            .map(|rest| rest.split(',').next().unwrap().to_owned())
            .collect()
    };
    let one = vec!["1".to_owned()];
    let acquires = ["rlock.acquire", "rfair.acquire", "rfenced.acquire"].map(calls);
    assert_eq!(acquires, [one.clone(), one.clone(), one], "{stats}");
    assert_eq!(calls("rrw.acquire"), ["2"], "{stats}");
    let statuses = ["multi", "rlock.status", "rfair.status", "rrw.status"];
    assert!(statuses.into_iter().all(|command| calls(command).is_empty()), "{stats}");
    drop((first, first_rw, second, second_rw));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handles_have_distinct_owners_unless_given_one() {
    let server = Server::shared();
    let client = client(&server).await;
    let (a, b) = (client.lock("shared"), client.lock("shared"));
    assert_ne!(a.owner(), b.owner());
    let guard = a.lock().await.unwrap();
    assert!(b.try_lock(Duration::from_millis(50), None).await.unwrap().is_none());

    let same_owner = client.owned_by(a.owner()).lock("shared");
    let handed_off = same_owner.try_lock(Duration::ZERO, None).await.unwrap().expect("same owner re-enters");
    assert_eq!(same_owner.hold_count().await.unwrap(), 2);
    handed_off.unlock().await.unwrap();
    guard.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn try_lock_honours_its_wait_limit() {
    let server = Server::shared();
    let client = client(&server).await;
    let holder = client.lock("busy").lock_with_lease(Duration::from_secs(30)).await.unwrap();

    let started = Instant::now();
    let attempt = client.lock("busy").try_lock(Duration::from_millis(300), None).await.unwrap();
    let waited = started.elapsed();
    assert!(attempt.is_none());
    assert!(waited >= Duration::from_millis(300), "gave up early: {waited:?}");
    assert!(waited < Duration::from_secs(3), "overran the wait: {waited:?}");
    assert_eq!(client.lock("busy").try_lock(Duration::ZERO, None).await.unwrap().map(|_| ()), None);
    holder.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchdog_keeps_a_lock_for_many_timeouts() {
    let server = Server::shared();
    let options = ClientOptions::default().with_watchdog_timeout(KEEPING_WATCHDOG);
    let client = Client::connect(server.client(), options).await.expect("client");
    let lock = client.lock("kept");
    let guard = lock.lock().await.unwrap();

    // A round every third of the timeout: 9 renewals outlive three timeouts.
    // The server shows each (the lease rising again), and that the lease
    // never ran out meanwhile.
    let lease = common::renewals(&server, "kept", 9).await;
    assert!(lease > KEEPING_WATCHDOG * 2 / 3, "renewed to the watchdog's timeout: {lease:?}");
    let other = client.lock("kept");
    assert!(other.try_lock(Duration::ZERO, None).await.unwrap().is_none(), "taken by another owner");
    assert!(!guard.is_lost());
    let stats = client.watchdog_stats();
    assert!(stats.rounds >= 9, "a round for each renewal: {stats:?}");
    assert_eq!((stats.locks, stats.lost), (1, 0));
    guard.unlock().await.unwrap();
    assert_eq!(client.watchdog_stats().locks, 0, "unlock stops renewal");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixed_lease_is_not_renewed() {
    let server = Server::shared();
    let client = client(&server).await;
    let lock = client.lock("fixed");
    let guard = lock.lock_with_lease(Duration::from_millis(300)).await.unwrap();
    tokio::time::timeout(PATIENCE, guard.lost()).await.expect("lost at the end of its lease");
    // `lost` counts the lease from before the acquire was sent, so it fires
    // no later than the server's expiry: the key goes at most a request's
    // latency after (a loaded machine showed it still there at once).
    eventually!("the key expired", Duration::from_secs(1), !lock.is_locked().await.unwrap());
    assert!(matches!(guard.unlock().await, Err(Error::NotOwner)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_fires_on_force_release_and_on_delete() {
    let server = Server::shared();
    let client = client(&server).await;
    let mut admin = server.client().get_multiplexed_async_connection_with_config(&common::patient()).await.unwrap();

    let guard = client.lock("forced").lock().await.unwrap();
    let _: i64 = redis::cmd("RLOCK.FORCERELEASE").arg("forced").query_async(&mut admin).await.unwrap();
    tokio::time::timeout(PATIENCE, guard.lost()).await.expect("lost after FORCERELEASE");
    assert!(guard.is_lost());
    assert!(matches!(guard.unlock().await, Err(Error::NotOwner)), "unlock of a lost lock");

    let guard = client.lock("deleted").lock_with_lease(Duration::from_secs(60)).await.unwrap();
    let _: i64 = admin.del("deleted").await.unwrap();
    tokio::time::timeout(PATIENCE, guard.lost()).await.expect("lost after DEL");
    assert!(matches!(guard.unlock().await, Err(Error::NotOwner)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlock_by_a_non_owner_is_refused() {
    let server = Server::shared();
    let client = client(&server).await;
    let lock = client.lock("mine");
    let guard = lock.lock().await.unwrap();
    assert!(lock.force_unlock().await.unwrap());
    assert!(!lock.force_unlock().await.unwrap());
    assert!(matches!(guard.unlock().await, Err(Error::NotOwner)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_guard_is_released_in_the_background() {
    let server = Server::shared();
    let client = client(&server).await;
    let lock = client.lock("dropped");
    drop(lock.lock().await.unwrap());
    eventually!("the background release", !lock.is_locked().await.unwrap());
}

/// Every release writes an unlock latch that lives for seconds (about 9 s
/// with these options) unless the client deletes it once the reply is in;
/// the client deletes them in batches, and none may be left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlock_latches_are_deleted_once_released() {
    let server = Server::shared();
    let client = client(&server).await;
    let tasks: Vec<_> = (0..32)
        .map(|task| {
            let lock = client.lock(format!("latched:{task}"));
            tokio::spawn(async move {
                for _ in 0..20 {
                    lock.lock().await.unwrap().unlock().await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let mut admin = common::admin(&server).await;
    let latches = || async { admin.clone().keys::<_, Vec<String>>("redisson_unlock_latch:*").await.unwrap() };
    eventually!("every latch deleted", Duration::from_secs(2), latches().await.is_empty());
    let keys: i64 = redis::cmd("DBSIZE").query_async(&mut admin).await.unwrap();
    assert_eq!(keys, 0, "no lock and no latch left");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_client_stops_renewal() {
    let server = Server::shared();
    let client = client(&server).await;
    let lock = client.lock("orphan");
    let guard = lock.lock().await.unwrap();
    drop(client);
    tokio::time::timeout(PATIENCE, guard.lost()).await.expect("lost when the client goes");
    eventually!("the lease to run out", !lock.is_locked().await.unwrap());
    assert!(matches!(lock.lock().await, Err(Error::ClientClosed)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_waiters_leave_no_subscription_and_no_lock() {
    let server = Server::shared();
    let client = client(&server).await;
    let holder = client.lock("contended").lock().await.unwrap();
    let channel = rlock_client::release_channel(b"contended");

    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let lock = client.lock("contended");
            tokio::spawn(async move { lock.lock().await.map(drop) })
        })
        .collect();
    eventually!("the waiters' shared subscription", numsub(&server, &channel).await == 1);
    for waiter in &waiters {
        waiter.abort();
    }
    eventually!("the unsubscription", numsub(&server, &channel).await == 0);

    // A waiter dropped by a timeout, right around the release.
    let late = client.lock("contended");
    let attempt = tokio::time::timeout(Duration::from_millis(50), late.lock());
    let (timed_out, unlocked) = tokio::join!(attempt, holder.unlock());
    unlocked.unwrap();
    if let Ok(guard) = timed_out {
        guard.unwrap().unlock().await.unwrap();
    }
    eventually!("no lock left behind", !late.is_locked().await.unwrap());
    eventually!("no subscription left behind", numsub(&server, &channel).await == 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_wakes_the_waiter_long_before_the_lease_ends() {
    let server = Server::shared();
    let client = client(&server).await;
    let holder = client.lock("handoff").lock_with_lease(Duration::from_secs(60)).await.unwrap();
    let waiter = client.lock("handoff");
    let waiting = tokio::spawn(async move {
        let guard = waiter.lock().await.unwrap();
        let woke = Instant::now();
        guard.unlock().await.unwrap();
        woke
    });
    let channel = rlock_client::release_channel(b"handoff");
    eventually!("the waiter's subscription", numsub(&server, &channel).await == 1);
    let released = Instant::now();
    holder.unlock().await.unwrap();
    let woke = tokio::time::timeout(PATIENCE, waiting).await.expect("woken").unwrap();
    assert!(woke.duration_since(released) < Duration::from_secs(5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redisson_script_holders_are_respected_and_wake_our_waiters() {
    let server = Server::shared();
    let scripts = RedissonScripts::default();
    let mut java = server.connection();
    scripts.load(&mut java).unwrap();
    let java_owner = b"5f3c1f2e-java-uuid:52";
    let reply: redis::Value = scripts.acquire(b"mixed", java_owner, 60_000).query(&mut java).unwrap();
    assert_eq!(reply, redis::Value::Nil);

    let client = client(&server).await;
    let lock = client.lock("mixed");
    assert!(lock.try_lock(Duration::from_millis(200), None).await.unwrap().is_none(), "the Java holder is respected");
    assert!(lock.is_locked().await.unwrap() && !lock.is_held().await.unwrap());

    let waiting = tokio::spawn(async move { lock.lock().await.unwrap() });
    let channel = rlock_client::release_channel(b"mixed");
    eventually!("the waiter's subscription", numsub(&server, &channel).await == 1);
    let released = Instant::now();
    let reply: redis::Value = scripts.release(b"mixed", java_owner, 60_000).query(&mut java).unwrap();
    assert_eq!(reply, redis::Value::Int(1));
    let guard = tokio::time::timeout(PATIENCE, waiting).await.expect("woken by the script's release").unwrap();
    assert!(released.elapsed() < Duration::from_secs(5), "woken by the message, not the 60 s lease");
    guard.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_the_module_gives_a_clear_error() {
    let server = Server::builder().without_module().start();
    let client = client(&server).await;
    let err = client.lock("x").lock().await.unwrap_err();
    assert!(matches!(err, Error::ModuleNotLoaded), "{err:?}");
    assert!(err.to_string().contains("rlock module not loaded"));
    assert!(matches!(client.lock("x").is_locked().await, Err(Error::ModuleNotLoaded)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_outside_the_modules_bounds_are_refused_locally() {
    let server = Server::shared();
    let client = client(&server).await;
    for lease in [Duration::ZERO, Duration::from_micros(10), rlock_client::MAX_LEASE * 2] {
        assert!(matches!(client.lock("x").lock_with_lease(lease).await, Err(Error::InvalidLease(_))));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewal_failing_until_the_lease_ends_reports_the_lock_lost() {
    let server = Server::shared();
    let client = client(&server).await;
    let lock = client.lock("unreachable");
    let guard = lock.lock().await.unwrap();

    server.pause();
    let paused = Instant::now();
    let lost = tokio::time::timeout(PATIENCE, guard.lost()).await;
    let after = paused.elapsed();
    server.resume();
    lost.expect("lost while the server hangs");
    // At the lease's end by the client's clock, well before the server
    // answers again; a loaded machine wakes the watchdog's timer late.
    assert!(after <= WATCHDOG + Duration::from_secs(3), "reported {after:?} after the pause");
    assert!(after >= WATCHDOG / 3, "reported too early: {after:?}");
    assert!(matches!(guard.unlock().await, Err(Error::NotOwner) | Err(Error::Redis(_))));
}
