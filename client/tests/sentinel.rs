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
    let ports = group.sentinel_ports();
    let promoted = tokio::task::spawn_blocking(move || primary_named_by(&ports)).await.unwrap().expect("a primary");
    assert_ne!(promoted, old, "the Sentinels promoted a replica");
    let server = group.servers.iter().find(|server| server.port() == promoted).expect("the promoted replica");
    let mut new_primary = server.connection();
    // Renewed there past the lease it had at the failover.
    tokio::time::sleep(WATCHDOG).await;
    let pttl: i64 = redis::cmd("PTTL").arg("kept").query(&mut new_primary).unwrap();
    assert!(pttl > 0, "the watchdog renews on the new primary: PTTL {pttl}");
    assert!(tokio::time::timeout(Duration::ZERO, kept.lost()).await.is_err(), "the kept hold is not lost");
    kept.unlock().await.expect("released on the new primary");
    let exists: i64 = redis::cmd("EXISTS").arg("kept").query(&mut new_primary).unwrap();
    assert_eq!(exists, 0);
}
