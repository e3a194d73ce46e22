//! rlock-client on a real Redis Cluster while a slot migrates (as
//! `redis-cli --cluster reshard` moves one): the watchdog's commands for
//! one slot may be answered by two nodes, the slot's owner for its keys
//! and the target (after ASK) for the keys it already has.

mod common;

use common::stalls::{calls, wait_for_rounds};
use rlock_client::{Client, ClientOptions, ReplicaSync};
use std::time::Duration;
use testkit::Cluster;

/// A held lock (watchdog) shares its MIGRATING slot with a lock granted on
/// the target (ASK). The watchdog's pipeline to the owner carried the
/// held lock's renewal and the other lock's status check; the check got
/// ASK, and redis-rs sent the whole pipeline to the target after ASKING,
/// which covers its first command only: the second got MOVED back to the
/// owner, and so on, until redis-rs's retries ran out (17 tries a round)
/// and every command of the pipeline failed. The renewals the owner ran
/// did not count, the failed rounds were retried at once, and the healthy
/// hold was reported lost when its lease ran out by the client's count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_is_not_lost_when_its_migrating_slot_gets_a_lock_on_the_target() {
    let cluster = Cluster::start(3, 0);
    let options =
        ClientOptions::default().with_watchdog_timeout(Duration::from_secs(2)).with_replica_sync(ReplicaSync::Off);
    let client = Client::connect_cluster(cluster.urls(), options).await.unwrap();
    let source = cluster.primary_for(b"{r}");
    let slot: i64 = redis::cmd("CLUSTER").arg("KEYSLOT").arg("{r}").query(&mut source.connection()).unwrap();
    let guard = client.lock("{r}held").lock().await.unwrap();
    let mut moving = cluster.begin_move(slot);
    // A new name of the slot: absent on the owner, so acquired on the target (ASK).
    let other = client.lock("{r}other").try_lock(Duration::from_secs(3), Some(Duration::from_secs(30))).await;
    let other = other.unwrap().expect("granted on the target");
    let renewals_before = calls(source, "rlock.renew");
    let rounds_before = client.watchdog_stats().rounds;
    // Two leases of the watchdog: six rounds, each with the renewal and the
    // check. Had the rounds failed, the lease would have run out by the
    // client's count within them.
    tokio::select! {
        _ = guard.lost() => {
            let pttl: i64 = redis::cmd("PTTL").arg("{r}held").query(&mut source.connection()).unwrap();
            let hash: Vec<String> = redis::cmd("HGETALL").arg("{r}held").query(&mut source.connection()).unwrap();
            panic!("hold reported lost while its owner has it: PTTL {pttl}, {hash:?}");
        }
        _ = wait_for_rounds(&client, rounds_before + 6) => {}
    }
    // A round may be in flight at either end: 5 to 7 ran on the owner.
    let renewals = calls(source, "rlock.renew") - renewals_before;
    assert!((5..=7).contains(&renewals), "{renewals} renewals on the owner in 6 rounds");
    let target = cluster.node(moving.target_port);
    assert_eq!(calls(target, "rlock.renew"), 0, "a renewal ran where its key is not");
    // A latched release in a slot whose keys are on two nodes is told
    // TRYAGAIN (as Redis tells Redisson's unlock script): the unlock waits,
    // the hold kept, until the slot's keys are on one node.
    let refused_before = failed_calls(source, "rlock.release");
    let unlock = guard.unlock();
    let finish = async {
        testkit::eventually!("the release told TRYAGAIN", failed_calls(source, "rlock.release") > refused_before);
        // Longer than the lease (three rounds of the watchdog): renewed meanwhile.
        wait_for_rounds(&client, client.watchdog_stats().rounds + 3).await;
        let counts: Vec<String> = redis::cmd("HVALS").arg("{r}held").query(&mut source.connection()).unwrap();
        assert_eq!(counts, ["1"], "still held while the unlock waits");
        moving.move_keys();
        moving.finish(&cluster);
    };
    let (unlocked, ()) = tokio::join!(unlock, finish);
    unlocked.expect("unlocked once the slot's keys are on one node");
    let mut target = target.connection();
    let held: bool = redis::cmd("EXISTS").arg("{r}held").query(&mut target).unwrap();
    assert!(!held, "released on the slot's new owner");
    other.unlock().await.unwrap();
    let held: bool = redis::cmd("EXISTS").arg("{r}other").query(&mut target).unwrap();
    assert!(!held, "the lock granted on the target released");
}

/// How many calls of `command` on `node` replied an error (`failed_calls`).
fn failed_calls(node: &testkit::Server, command: &str) -> u64 {
    let stats = testkit::info_field(&mut node.connection(), "commandstats", &format!("cmdstat_{command}"));
    stats
        .and_then(|stats| stats.split(',').find_map(|part| part.strip_prefix("failed_calls=")?.parse().ok()))
        .unwrap_or(0)
}
