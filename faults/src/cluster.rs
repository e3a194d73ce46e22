//! The cluster topology: three primaries with a replica each, the clients
//! rlock-client `Client`s on it (they route by slot and follow `MOVED` and
//! `ASK`). Its faults hit the shard that serves the first name: kill -9
//! or SIGSTOP of its primary (its replica takes over), or every name's
//! slot moved to another primary while clients hold and wait: by MIGRATE,
//! or atomically where the server has `CLUSTER MIGRATESLOTS` (Valkey 9).

use crate::workload::{lock_name, NAMES};
use std::thread;
use std::time::Duration;
use testkit::{Cluster, Server};

pub const PRIMARIES: usize = 3;
/// How long the SIGSTOP lasts: longer than a failover, which takes the
/// cluster about twice its node timeout (2 s) to detect and elect.
pub const STOP_LASTS: Duration = Duration::from_secs(6);
/// How long a slot stays half moved (`MIGRATING` on its owner,
/// `IMPORTING` on the next), before and after its keys move: clients meet
/// `ASK` for a name the owner lacks, and `MOVED` once it is done.
const HALF_MOVED: Duration = Duration::from_millis(500);

/// The slot of the first name, whose primary the kill and the stop hit.
pub fn first_slot(cluster: &Cluster) -> i64 {
    slot_of(cluster, &lock_name(0))
}

fn slot_of(cluster: &Cluster, key: &str) -> i64 {
    let mut con = cluster.nodes[0].connection();
    redis::cmd("CLUSTER").arg("KEYSLOT").arg(key).query(&mut con).expect("CLUSTER KEYSLOT")
}

/// The names whose slots the primary on `port` serves.
pub fn names_served_by(cluster: &Cluster, port: u16) -> Vec<usize> {
    (0..NAMES).filter(|name| cluster.slot_owner(slot_of(cluster, &lock_name(*name))) == Some(port)).collect()
}

/// The node that serves `slot` now.
pub fn owner_of(cluster: &mut Cluster, slot: i64) -> &mut Server {
    let port = cluster.slot_owner(slot).expect("an owner of the slot");
    cluster.nodes.iter_mut().find(|node| node.port() == port).expect("the owner is one of the cluster's nodes")
}

/// Moves every name's slot to another primary, one after the other, as
/// `redis-cli --cluster reshard` moves a slot (MIGRATE of its keys).
pub fn migrate_names(cluster: &Cluster) {
    for slot in names_slots(cluster) {
        migrate(cluster, slot);
    }
}

/// Moves every name's slot to another primary, one after the other, with
/// `CLUSTER MIGRATESLOTS`: no half-moved slot, the target takes it at once.
pub fn migrate_names_atomically(cluster: &Cluster) {
    for slot in names_slots(cluster) {
        cluster.migrate_slot_atomically(slot);
    }
}

/// The slots of the names, each once.
fn names_slots(cluster: &Cluster) -> Vec<i64> {
    let mut slots: Vec<i64> = (0..NAMES).map(|name| slot_of(cluster, &lock_name(name))).collect();
    slots.sort_unstable();
    slots.dedup();
    slots
}

fn migrate(cluster: &Cluster, slot: i64) {
    let mut slot_move = cluster.begin_move(slot);
    thread::sleep(HALF_MOVED);
    slot_move.move_keys();
    thread::sleep(HALF_MOVED);
    slot_move.finish(cluster);
}
