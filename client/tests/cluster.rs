//! rlock-client on a real Redis Cluster: 3 primaries, 3 replicas, the
//! module on every node.

use redis::AsyncCommands;
use rlock_client::{Client, ClientOptions};
use std::collections::HashMap;
use std::time::{Duration, Instant};
use testkit::{eventually, Cluster};

mod common;

use common::clients::{client_line, connection_that_ran, has_id, idle_over_a_second};
use common::stalls::{calls, wait_for_rounds};

const TASKS_PER_LOCK: usize = 4;
const UPDATES_PER_TASK: usize = 25;

async fn client(cluster: &Cluster, options: ClientOptions) -> Client {
    Client::connect_cluster(cluster.urls(), options).await.expect("cluster client")
}

/// Lock names, two on each primary.
fn names_on_every_primary(cluster: &Cluster) -> Vec<String> {
    let mut per_primary: HashMap<u16, Vec<String>> = HashMap::new();
    for n in 0.. {
        let name = format!("lock:{n}");
        let names = per_primary.entry(cluster.primary_for(name.as_bytes()).port()).or_default();
        if names.len() < 2 {
            names.push(name);
        }
        if per_primary.len() == 3 && per_primary.values().all(|names| names.len() == 2) {
            break;
        }
    }
    per_primary.into_values().flatten().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exclusion_and_hand_off_on_locks_over_all_primaries() {
    let cluster = Cluster::start(3, 1);
    let client = client(&cluster, ClientOptions::default()).await;
    let data = redis::cluster::ClusterClient::new(cluster.urls()).unwrap();

    // The listing walks every primary: each held lock is listed.
    let names = names_on_every_primary(&cluster);
    let mut guards = Vec::new();
    for name in &names {
        guards.push(client.lock(name.as_str()).lock().await.unwrap());
    }
    let mut listing = client.list_locks(Some("lock:*"));
    let mut listed = std::collections::BTreeSet::new();
    while let Some(lock) = listing.next().await {
        listed.insert(String::from_utf8(lock.unwrap().name).unwrap());
    }
    assert_eq!(listed, names.iter().cloned().collect(), "every primary's locks");
    for guard in guards {
        guard.unlock().await.unwrap();
    }

    let started = Instant::now();

    let mut tasks = tokio::task::JoinSet::new();
    for name in names_on_every_primary(&cluster) {
        for _ in 0..TASKS_PER_LOCK {
            let lock = client.lock(name.as_str());
            let mut con = data.get_async_connection().await.unwrap();
            let counter = format!("counter:{{{name}}}");
            tasks.spawn(async move {
                for _ in 0..UPDATES_PER_TASK {
                    let guard = lock.lock().await.unwrap();
                    let value: i64 = con.get::<_, Option<i64>>(&counter).await.unwrap().unwrap_or(0);
                    tokio::task::yield_now().await;
                    let _: () = con.set(&counter, value + 1).await.unwrap();
                    guard.unlock().await.unwrap();
                }
                counter
            });
        }
    }
    let mut counters = std::collections::BTreeSet::new();
    while let Some(counter) = tasks.join_next().await {
        counters.insert(counter.unwrap());
    }
    let mut con = data.get_async_connection().await.unwrap();
    for counter in counters {
        let value: i64 = con.get(&counter).await.unwrap();
        assert_eq!(value, (TASKS_PER_LOCK * UPDATES_PER_TASK) as i64, "{counter} lost updates");
    }
    // Waiters woke on release messages: waiting out 30 s leases would take far longer.
    assert!(started.elapsed() < Duration::from_secs(25), "hand-offs took {:?}", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redissons_plain_channel_reaches_other_nodes() {
    let cluster = Cluster::start(3, 1);
    let client = client(&cluster, ClientOptions::default()).await;
    let primary = cluster.primary_for(b"plain").port();
    let elsewhere = cluster.nodes.iter().find(|n| n.port() != primary).unwrap();
    let mut subscriber = elsewhere.connection();
    let mut pubsub = subscriber.as_pubsub();
    pubsub.subscribe(rlock_client::release_channel(b"plain")).unwrap();

    client.lock("plain").lock().await.unwrap().unlock().await.unwrap();
    pubsub.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let message = pubsub.get_message().expect("Redisson's release message on another node");
    assert_eq!(message.get_channel_name(), "redisson_lock__channel:{plain}");
    assert_eq!(message.get_payload::<String>().unwrap(), "0");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_synced_lock_survives_a_manual_failover() {
    let cluster = Cluster::start(3, 1);
    let options = ClientOptions::default().with_watchdog_timeout(Duration::from_secs(3));
    let client = client(&cluster, options).await;
    let lock = client.lock("failover");
    let guard = lock.lock().await.unwrap();

    let replica = cluster.replica_for(b"failover");
    let _: () = redis::cmd("CLUSTER").arg("FAILOVER").query(&mut replica.connection()).unwrap();
    testkit::eventually("the replica's promotion", Duration::from_secs(30), || {
        let info: String = redis::cmd("INFO").arg("replication").query(&mut replica.connection()).unwrap_or_default();
        info.contains("role:master")
    });
    cluster.wait_until_healthy(6);
    testkit::eventually("the slot map to name the new primary", Duration::from_secs(30), || {
        cluster.primary_for(b"failover").port() == replica.port()
    });

    let other = client_without_sync(&cluster).await;
    assert!(
        other.lock("failover").try_lock(Duration::ZERO, None).await.unwrap().is_none(),
        "still held after failover"
    );
    let follow = Duration::from_secs(30);
    eventually!("the client to follow the new primary", follow, lock.is_held().await.unwrap_or(false));
    // Renewals reach the new primary.
    wait_for_rounds(&client, client.watchdog_stats().rounds + 2).await;
    assert!(!guard.is_lost());
    guard.unlock().await.unwrap();
}

async fn client_without_sync(cluster: &Cluster) -> Client {
    client(cluster, ClientOptions::default().with_replica_sync(rlock_client::ReplicaSync::Off)).await
}

/// Resumes a SIGSTOPped node when dropped, also when the test fails.
struct Resume<'a>(&'a testkit::Server);

impl Drop for Resume<'_> {
    fn drop(&mut self) {
        self.0.resume();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_primary_does_not_cost_the_locks_on_the_others() {
    // No replicas, so no failover; and the healthy primaries keep serving
    // their slots when the others flag the hung one as failed.
    let cluster = Cluster::start(3, 0);
    for node in &cluster.nodes {
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("cluster-require-full-coverage")
            .arg("no")
            .query(&mut node.connection())
            .unwrap();
    }
    let watchdog = Duration::from_millis(900);
    let options =
        ClientOptions::default().with_watchdog_timeout(watchdog).with_replica_sync(rlock_client::ReplicaSync::Off);
    let client = client(&cluster, options).await;
    let mut held = Vec::new();
    for node in &cluster.nodes {
        let name =
            (0..).map(|n| format!("hung:{n}")).find(|name| cluster.primary_for(name.as_bytes()).port() == node.port());
        let name = name.unwrap();
        held.push((node, client.lock(name.as_str()).lock().await.unwrap(), name));
    }
    let (hung, on_hung, _) = held.remove(0);

    // From a steady state: the watchdog has its slot map.
    wait_for_rounds(&client, 1).await;
    assert_eq!(client.watchdog_stats().failed_rounds, 0);
    hung.pause();
    let _resume = Resume(hung);
    // The hung node's lease runs out unrenewed: its guard is lost.
    tokio::time::timeout(Duration::from_secs(10), on_hung.lost()).await.expect("the hung node's lock lost");
    // More than a lease of rounds with the node still hung.
    let rounds = client.watchdog_stats().rounds + 4;
    eventually!("more than a lease of rounds", {
        for (_, guard, name) in &held {
            assert!(!guard.is_lost(), "{name} on a healthy primary was reported lost");
        }
        client.watchdog_stats().rounds >= rounds
    });
    for (node, _, name) in &held {
        let pttl: i64 = redis::cmd("PTTL").arg(name).query(&mut node.connection()).unwrap();
        assert!(pttl > 0, "{name} on a healthy primary has PTTL {pttl}");
    }
    drop(_resume);
    for (_, guard, _) in held {
        guard.unlock().await.unwrap();
    }
}

/// CLUSTER SLOTS calls served by the whole cluster so far.
fn cluster_slots_calls(cluster: &Cluster) -> u64 {
    cluster.nodes.iter().map(|node| calls(node, "cluster|slots")).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewal_rounds_reuse_the_slot_map() {
    let cluster = Cluster::start(3, 0);
    let options = ClientOptions::default()
        .with_watchdog_timeout(Duration::from_millis(600))
        .with_replica_sync(rlock_client::ReplicaSync::Off);
    let client = client(&cluster, options).await;
    let guards = lock_all(&client, &names_on_every_primary(&cluster)).await;
    wait_for_rounds(&client, 2).await;
    let before = cluster_slots_calls(&cluster);
    wait_for_rounds(&client, client.watchdog_stats().rounds + 5).await;
    assert_eq!(cluster_slots_calls(&cluster), before, "CLUSTER SLOTS read again while nothing changed");
    assert_eq!(client.watchdog_stats().failed_rounds, 0);
    for guard in guards {
        assert!(!guard.is_lost());
        guard.unlock().await.unwrap();
    }
}

async fn lock_all(client: &Client, names: &[String]) -> Vec<rlock_client::Guard> {
    let mut guards = Vec::new();
    for name in names {
        guards.push(client.lock(name.as_str()).lock().await.unwrap());
    }
    guards
}

/// Each primary's `rlock_contended` from `INFO rlock`, summed.
fn refused_acquires(cluster: &Cluster) -> i64 {
    cluster.nodes.iter().map(|node| testkit::rlock_info(&mut node.connection(), "contended")).sum()
}

/// A lock name whose release channel lives on another primary: `orders{N`
/// has no hash tag, so its channel `redisson_lock__channel:orders{N`
/// hashes elsewhere.
fn name_whose_channel_is_elsewhere(cluster: &Cluster) -> String {
    (0..)
        .map(|n| format!("orders{{{n}"))
        .find(|name| {
            let channel = rlock_client::release_channel(name.as_bytes());
            cluster.primary_for(name.as_bytes()).port() != cluster.primary_for(&channel).port()
        })
        .unwrap()
}

/// A waiter for `name`, on a task, once it waits: refused before and
/// after subscribing.
async fn waiting_for(cluster: &Cluster, client: &Client, name: &str) -> tokio::task::JoinHandle<()> {
    let refused = refused_acquires(cluster);
    let lock = client.lock(name);
    let waiting = tokio::spawn(async move { lock.lock().await.unwrap().unlock().await.unwrap() });
    eventually!(format!("{name}: the waiter to wait"), refused_acquires(cluster) >= refused + 2);
    waiting
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_wakes_waiters_whatever_the_names_braces() {
    let cluster = Cluster::start(3, 0);
    let client = client(&cluster, ClientOptions::default()).await;
    let unbalanced = name_whose_channel_is_elsewhere(&cluster);
    for name in ["plain-name", "{tagged}name", unbalanced.as_str()] {
        let holder = client.lock(name).lock_with_lease(Duration::from_secs(60)).await.unwrap();
        let waiting = waiting_for(&cluster, &client, name).await;
        holder.unlock().await.unwrap();
        tokio::time::timeout(Duration::from_secs(20), waiting)
            .await
            .unwrap_or_else(|_| panic!("{name}: woken by the release, not the 60 s lease"))
            .unwrap();
    }
}

/// The cluster bus drops a release's message while a link between two
/// nodes reconnects: a waiter whose channel crosses it looks again within
/// seconds, not at the holder's lease's end. Here the lock is freed with
/// no message at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_whose_channel_crosses_the_bus_looks_again_without_a_message() {
    let cluster = Cluster::start(3, 0);
    let client = client(&cluster, ClientOptions::default()).await;
    let name = name_whose_channel_is_elsewhere(&cluster);
    let holder = client.lock(&name).lock_with_lease(Duration::from_secs(60)).await.unwrap();
    let waiting = waiting_for(&cluster, &client, &name).await;
    let _: i64 = redis::cmd("DEL").arg(&name).query(&mut cluster.primary_for(name.as_bytes()).connection()).unwrap();
    tokio::time::timeout(Duration::from_secs(20), waiting)
        .await
        .expect("looked again within seconds, not at the 60 s lease's end")
        .unwrap();
    drop(holder);
}

/// An unlatched release (a name with `{` and no hash tag) goes on the
/// client's own connection to the node. When that connection sat idle and
/// the server closed it (its `timeout`, or `CLIENT KILL`), the next release
/// was never written to it: it goes on a new connection, once, and succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_after_its_idle_node_connection_was_closed_goes_on_a_new_one() {
    let cluster = Cluster::start(3, 0);
    let client = client_without_sync(&cluster).await;
    let name = "idle{release";
    let node = cluster.primary_for(name.as_bytes());
    let lock = client.lock(name);
    let mut guards = vec![lock.lock().await.unwrap(), lock.lock().await.unwrap(), lock.lock().await.unwrap()];
    guards.pop().unwrap().unlock().await.unwrap();

    let idle = connection_that_ran(node, "rlock.release");
    let _: () = redis::cmd("CONFIG").arg("SET").arg("timeout").arg(1).query(&mut node.connection()).unwrap();
    eventually!("the server's timeout closes the idle connection", client_line(node, has_id(&idle)).is_none());
    let released = guards.pop().unwrap().unlock().await;
    assert!(released.is_ok(), "the release after the server's timeout: {released:?}");
    let _: () = redis::cmd("CONFIG").arg("SET").arg("timeout").arg(0).query(&mut node.connection()).unwrap();

    let killed = connection_that_ran(node, "rlock.release");
    eventually!("the connection sits idle", Duration::from_secs(5), idle_over_a_second(node, &killed));
    let _: () = redis::cmd("CLIENT").arg("KILL").arg("ID").arg(&killed).query(&mut node.connection()).unwrap();
    let released = guards.pop().unwrap().unlock().await;
    let exists: bool = redis::cmd("EXISTS").arg(name).query(&mut node.connection()).unwrap();
    assert!(released.is_ok() && !exists, "the release after CLIENT KILL: {released:?}, the lock still there: {exists}");
}

/// A node killed (SIGKILL, no persistence) and started again on its port
/// under holds of every kind, with a watchdog too slow to notice first:
/// each unlock then says the hold is gone (`NotOwner`, or an error), never
/// `Ok` (a fair release of the missing lock answered "released", as
/// Redisson's script), and the client takes and frees each lock again there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlocks_after_their_node_restarted_empty_release_nothing_and_say_so() {
    let mut cluster = Cluster::start(3, 0);
    let options = ClientOptions::default()
        .with_watchdog_timeout(Duration::from_secs(60))
        .with_replica_sync(rlock_client::ReplicaSync::Off);
    let client = client(&cluster, options).await;
    let rw = client.read_write_lock("{restarted}rw");
    let locks = [client.lock("{restarted}plain"), client.fair_lock("{restarted}fair"), rw.write(), rw.read()];
    let mut guards = Vec::new();
    for lock in &locks {
        guards.push(lock.lock().await.unwrap());
    }
    let port = cluster.primary_for(b"{restarted}").port();
    let node = cluster.nodes.iter().position(|node| node.port() == port).unwrap();
    tokio::task::block_in_place(|| {
        cluster.nodes[node].restart();
        cluster.wait_until_healthy(3);
    });
    for (lock, guard) in locks.iter().zip(guards).rev() {
        let unlocked = guard.unlock().await;
        assert!(unlocked.is_err(), "{:?}: the unlock of a hold its node lost answered {unlocked:?}", lock.kind());
    }
    for lock in &locks {
        let guard = lock.try_lock(Duration::from_secs(5), None).await.unwrap().expect("taken again");
        guard.unlock().await.unwrap();
        assert!(!lock.is_locked().await.unwrap(), "{:?}", lock.kind());
    }
}
