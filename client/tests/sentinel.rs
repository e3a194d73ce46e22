//! A client made from Sentinel addresses follows a failover: after the
//! primary is killed, its watchdog renews on the primary the Sentinels
//! promote; a hold the new primary has goes on (and is released there),
//! a hold it lacks (a grant replication lost) is reported lost.

use rlock_client::{Client, ClientOptions, ReplicaSync, RetryOptions};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use testkit::{eventually, primary_named_by, SentinelGroup, Server, MASTER};

const WATCHDOG: Duration = Duration::from_secs(10);
const PATIENCE: Duration = Duration::from_secs(30);

/// Renewals the module counted on `server` (`INFO rlock`).
fn renewed(server: &Server) -> i64 {
    testkit::rlock_info(&mut server.connection(), "renewed")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn holds_follow_the_primary_sentinel_promotes_and_one_it_lacks_is_lost() {
    let mut group = SentinelGroup::start(&[], &[]);
    let sentinels: Vec<String> =
        group.sentinel_ports().iter().map(|port| format!("redis://127.0.0.1:{port}")).collect();
    let options = ClientOptions::default().with_watchdog_timeout(WATCHDOG).with_replica_sync(ReplicaSync::Off);
    let client = Client::connect_sentinel(sentinels, MASTER, Default::default(), options).await.expect("client");
    let kept = client.lock("kept").lock().await.unwrap();
    let dropped = client.lock("dropped").lock().await.unwrap();
    let mut primary = group.servers[0].connection();
    let acknowledged: i64 = redis::cmd("WAIT").arg(2).arg(5_000).query(&mut primary).unwrap();
    assert_eq!(acknowledged, 2, "both replicas have both holds");
    // "dropped" leaves the replicas, as a grant that replication lost.
    for replica in &group.servers[1..] {
        let mut con = replica.connection();
        let _: () = redis::cmd("CONFIG").arg(&["SET", "replica-read-only", "no"]).query(&mut con).unwrap();
        let _: i64 = redis::cmd("DEL").arg("dropped").query(&mut con).unwrap();
    }
    let old = group.servers[0].port();
    group.servers[0].kill();

    tokio::time::timeout(PATIENCE, dropped.lost()).await.expect("the hold the new primary lacks is reported lost");
    // Renewals counted on each replica by now (replicated ones included:
    // none is in flight any more).
    let counted: Vec<i64> = group.servers[1..].iter().map(renewed).collect();
    let named = || {
        let ports = group.sentinel_ports();
        async move { tokio::task::spawn_blocking(move || primary_named_by(&ports)).await.unwrap().expect("a primary") }
    };
    assert_ne!(named().await, old, "the Sentinels promoted a replica");
    // Renewed by the watchdog on the primary the Sentinels name by then (a
    // loaded machine may fail over twice).
    let mut promoted: u16;
    eventually!("a renewal on the promoted replica", PATIENCE, {
        promoted = named().await;
        let index = group.servers[1..].iter().position(|server| server.port() == promoted).expect("a replica promoted");
        renewed(&group.servers[1 + index]) > counted[index]
    });
    let server = group.servers.iter().find(|server| server.port() == promoted).unwrap();
    let mut new_primary = server.connection();
    let pttl: i64 = redis::cmd("PTTL").arg("kept").query(&mut new_primary).unwrap();
    assert!(pttl > 0, "the watchdog renews on the new primary: PTTL {pttl}");
    assert!(tokio::time::timeout(Duration::ZERO, kept.lost()).await.is_err(), "the kept hold is not lost");
    kept.unlock().await.expect("released on the new primary");
    let exists: i64 = redis::cmd("EXISTS").arg("kept").query(&mut new_primary).unwrap();
    assert_eq!(exists, 0);
}

/// A failover that makes nothing fail (`SENTINEL FAILOVER`): the client
/// still moves, within a check of the Sentinels, renews there, and its
/// waiters' subscriptions move too (a release wakes them, not a timer).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failover_that_fails_nothing_still_moves_commands_and_waiters() {
    let group = SentinelGroup::start(&[], &[]);
    let sentinels: Vec<String> =
        group.sentinel_ports().iter().map(|port| format!("redis://127.0.0.1:{port}")).collect();
    let options = ClientOptions::default().with_watchdog_timeout(WATCHDOG).with_replica_sync(ReplicaSync::Off);
    let connect = || Client::connect_sentinel(sentinels.clone(), MASTER, Default::default(), options.clone());
    let (holder, waiter) = (connect().await.expect("client"), connect().await.expect("client"));
    let held = holder.lock("x").lock().await.unwrap();
    let waiting = {
        let lock = waiter.lock("x");
        tokio::spawn(async move { lock.lock().await })
    };
    let old = group.servers[0].port();
    let mut sentinel =
        redis::Client::open(sentinels[0].as_str()).unwrap().get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("SENTINEL").arg("FAILOVER").arg(MASTER).query_async(&mut sentinel).await.unwrap();
    let ports = group.sentinel_ports();
    let mut promoted: Option<u16>;
    eventually!("a failover", PATIENCE, {
        let ports = ports.clone();
        promoted =
            tokio::task::spawn_blocking(move || primary_named_by(&ports)).await.unwrap().filter(|&port| port != old);
        promoted.is_some()
    });
    let promoted = promoted.unwrap();
    let server = group.servers.iter().find(|server| server.port() == promoted).unwrap();
    let mut new_primary = server.connection();
    // Renewed on the new primary (a replica no longer: no renewal counted
    // there from now on is a replicated one).
    let replicated = renewed(server);
    eventually!("a renewal on the new primary", PATIENCE, renewed(server) > replicated);
    let pttl: i64 = redis::cmd("PTTL").arg("x").query(&mut new_primary).unwrap();
    assert!(pttl > 0, "renewed on the new primary: PTTL {pttl}");
    assert!(!held.is_lost());
    let released = std::time::Instant::now();
    held.unlock().await.expect("released on the new primary");
    let taken = tokio::time::timeout(PATIENCE, waiting).await.expect("the waiter is granted").unwrap().unwrap();
    assert!(
        released.elapsed() < Duration::from_secs(5),
        "woken by the release, not its timer: {:?}",
        released.elapsed()
    );
    taken.unlock().await.unwrap();
}

/// The primary the Sentinels promoted refuses writes for want of a replica
/// (`min-replicas-to-write`: here its only replica died; after a second
/// failover, the promoted replica has none until Sentinel turns the old
/// primary into one, 8 s or more). `NOREPLICAS` runs nothing, as `READONLY`
/// does: a waiting `try_lock` retries it within its retry options and is
/// granted once writes resume, rather than failing at once with an error
/// that passes for permanent (the fault suite's clients then failed every
/// call at once for 12 s after a kill -9, granting nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_promoted_primary_without_replicas_is_waited_for_not_a_permanent_error() {
    // The recommended settings (docs/safety.md, "Failover settings").
    let mut group = SentinelGroup::start(&[], &testkit::failover::min_replicas_config());
    let sentinels: Vec<String> =
        group.sentinel_ports().iter().map(|port| format!("redis://127.0.0.1:{port}")).collect();
    // Enough retries to outlast the test's reaction below on a loaded machine.
    let options = ClientOptions::default().with_retry(RetryOptions::new(1_000, Duration::from_millis(20)));
    let client = Client::connect_sentinel(sentinels, MASTER, Default::default(), options).await.expect("client");
    let old = group.servers[0].port();
    group.servers[0].kill();
    let ports = group.sentinel_ports();
    let promoted = tokio::task::spawn_blocking(move || {
        let mut promoted = None;
        testkit::eventually("a failover", PATIENCE, || {
            promoted = primary_named_by(&ports).filter(|port| *port != old);
            promoted.is_some()
        });
        promoted.unwrap()
    })
    .await
    .unwrap();
    let (index, _) = group.servers.iter().enumerate().find(|(_, server)| server.port() == promoted).unwrap();
    group.servers[3 - index].kill(); // the other replica: the new primary has none
    let mut primary = group.servers[index].connection();
    let write = |con: &mut redis::Connection| redis::cmd("SET").arg("probe").arg(1).query::<()>(con);
    testkit::eventually("the new primary to refuse writes", PATIENCE, || {
        write(&mut primary).is_err_and(|err| err.code() == Some("NOREPLICAS"))
    });
    let refusals = |con: &mut redis::Connection| -> u64 {
        let info: String = redis::cmd("INFO").arg("errorstats").query(con).unwrap();
        info.lines()
            .find_map(|line| line.strip_prefix("errorstat_NOREPLICAS:count="))
            .map_or(0, |count| count.trim().parse().unwrap())
    };
    let before = refusals(&mut primary);
    let lock = client.lock("x");
    let started = std::time::Instant::now();
    let trying = tokio::spawn(async move { lock.try_lock(PATIENCE, None).await });
    // Writes resume (the old primary, converted, would sync) once the
    // client has had a refusal and asked again.
    let answered = Arc::new(AtomicBool::new(false));
    let retried = tokio::task::spawn_blocking({
        let answered = answered.clone();
        move || {
            while !answered.load(Ordering::SeqCst) {
                if refusals(&mut primary) >= before + 2 {
                    let set = ["SET", "min-replicas-to-write", "0"];
                    let _: () = redis::cmd("CONFIG").arg(&set).query(&mut primary).unwrap();
                    return true;
                }
                // The poll interval of INFO errorstats (the event), on a thread that also stops once the try answers.
                std::thread::sleep(Duration::from_millis(5));
            }
            false
        }
    });
    let granted = trying.await.unwrap();
    answered.store(true, Ordering::SeqCst);
    let waited = started.elapsed();
    let granted =
        granted.unwrap_or_else(|err| panic!("try_lock failed after {waited:?}, not waiting for writes: {err}"));
    let guard = granted.expect("granted once writes resume");
    assert!(retried.await.unwrap(), "the client asked again after NOREPLICAS");
    guard.unlock().await.expect("released");
}

/// A primary that refuses every write for a while (`NOREPLICAS`) fails
/// each retry of each caller; the client asks the Sentinels where the
/// primary is after a failure, but not after every one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_primary_refusing_writes_does_not_make_each_retry_ask_the_sentinels() {
    let group = SentinelGroup::start(&[], &[]);
    let sentinel_ports = group.sentinel_ports();
    let sentinels: Vec<String> = sentinel_ports.iter().map(|port| format!("redis://127.0.0.1:{port}")).collect();
    const TRIES: u32 = 200;
    let options = ClientOptions::default().with_retry(RetryOptions::new(TRIES, Duration::from_millis(5)));
    let client = Client::connect_sentinel(sentinels, MASTER, Default::default(), options).await.expect("client");
    let mut primary = group.servers[0].connection();
    // Two replicas: asking for three refuses every write.
    let _: () = redis::cmd("CONFIG").arg(&["SET", "min-replicas-to-write", "3"]).query(&mut primary).unwrap();
    // Each look connects to every Sentinel (Sentinel keeps no
    // commandstats): two connections a look, as measured.
    let looks = |port: u16| -> u64 {
        let mut con = redis::Client::open(format!("redis://127.0.0.1:{port}")).unwrap().get_connection().unwrap();
        let info: String = redis::cmd("INFO").arg("stats").query(&mut con).unwrap();
        let stat = info.lines().find_map(|line| line.strip_prefix("total_connections_received:"));
        stat.expect("total_connections_received").trim().parse().unwrap()
    };
    let before = looks(sentinel_ports[0]);
    let started = std::time::Instant::now();
    let refused = client.lock("x").try_lock(Duration::from_secs(30), None).await;
    let (elapsed, after) = (started.elapsed(), looks(sentinel_ports[0]));
    assert!(refused.is_err_and(|err| err.to_string().contains("NOREPLICAS")), "every try refused");
    // One look per 100 ms at most, the periodic one each second, and this
    // test's own connection (each try asked before: 405 connections).
    let bound = 2 * (2 + elapsed.as_millis() as u64 / 100 + elapsed.as_secs()) + 1;
    let connections = after - before;
    assert!(connections <= bound, "{connections} connections in {elapsed:?} for {TRIES} refused tries");
}
