//! A client made from Sentinel addresses follows a failover: after the
//! primary is killed, its watchdog renews on the primary the Sentinels
//! promote; a hold the new primary has goes on (and is released there),
//! a hold it lacks (a grant replication lost) is reported lost.

use rlock_client::{Client, ClientOptions, ReplicaSync};
use std::time::Duration;
use testkit::{primary_named_by, SentinelGroup, MASTER};

const WATCHDOG: Duration = Duration::from_secs(10);
const PATIENCE: Duration = Duration::from_secs(30);

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
    let named = || {
        let ports = group.sentinel_ports();
        async move { tokio::task::spawn_blocking(move || primary_named_by(&ports)).await.unwrap().expect("a primary") }
    };
    assert_ne!(named().await, old, "the Sentinels promoted a replica");
    // Renewed past the lease it had at the failover, on the primary the
    // Sentinels name by then (a loaded machine may fail over twice).
    tokio::time::sleep(WATCHDOG).await;
    let promoted = named().await;
    let server = group.servers.iter().find(|server| server.port() == promoted).expect("a replica promoted");
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
    let promoted = tokio::time::timeout(PATIENCE, async {
        loop {
            let ports = ports.clone();
            match tokio::task::spawn_blocking(move || primary_named_by(&ports)).await.unwrap() {
                Some(port) if port != old => return port,
                _ => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    })
    .await
    .expect("a failover");
    let server = group.servers.iter().find(|server| server.port() == promoted).unwrap();
    let mut new_primary = server.connection();
    // Past the lease at the failover: renewed on the new primary.
    tokio::time::sleep(WATCHDOG + Duration::from_secs(2)).await;
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
