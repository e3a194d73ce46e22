//! The rlock-client workload: each client is an rlock-client `Client`
//! made from the Sentinels' addresses or the cluster's nodes, so it
//! follows failovers and moved slots itself (the raw clients follow the
//! primary the run's watcher names). It
//! waits for a name with `try_lock` (on pub/sub, as the client waits
//! under Sentinel), holds it with the watchdog renewing the lease, and
//! records its critical section from the grant until the earlier of its
//! release and `lost()`, and each wait, for the stuck-waiter check. The
//! client-pause fault stops a holder's whole client past its lease.

use crate::workload::{client_rng, lock_name, Section, Shared, Wait, LEASE, LONGEST_HOLD_MS, NAMES, PAUSE};
use rlock_client::{Client, ClientOptions};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use testkit::MASTER;

/// How long a client waits for a name before it picks another.
const LONGEST_WAIT_MS: u64 = 3_000;

/// Where the clients connect.
pub enum Nodes {
    /// The Sentinels, on these ports.
    Sentinels(Vec<u16>),
    /// A cluster's nodes, on these ports.
    Cluster(Vec<u16>),
}

/// One client's loop, until `shared.stop`.
pub fn client(id: usize, nodes: &Nodes, shared: &Shared, seed: u64) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a Tokio runtime");
    runtime.block_on(run(id, nodes, shared, seed));
}

async fn run(id: usize, nodes: &Nodes, shared: &Shared, seed: u64) {
    let mut rng = client_rng(seed, id);
    let Some(client) = connect(nodes, shared).await else { return };
    while !shared.stop.load(Ordering::Relaxed) {
        let name = rng.below(NAMES as u64) as usize;
        let lock = client.lock(lock_name(name));
        let wait = Duration::from_millis(500 + rng.below(LONGEST_WAIT_MS - 500));
        let asked = Instant::now();
        // A call the client cannot finish (no primary) gives up a little
        // after its wait, as a caller with a deadline would.
        let granted = tokio::time::timeout(wait + LEASE, lock.try_lock(wait, None)).await;
        let answered = Instant::now();
        shared.record_wait(Wait { name, start: asked, end: answered });
        let guard = match granted {
            Ok(Ok(Some(guard))) => guard,
            Ok(Ok(None)) => continue,
            _ => {
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        let hold_for = Duration::from_millis(200 + rng.below(LONGEST_HOLD_MS - 200));
        if shared.pause_next_holder.swap(false, Ordering::Relaxed) {
            // The whole client stops (a GC pause, a SIGSTOP): its watchdog
            // too. It acts as the holder until it wakes, and only then
            // could it hear of `lost()`.
            std::thread::sleep(PAUSE);
            shared.record_section(Section { name, client: id, start: answered, end: Instant::now() });
            let _ = tokio::time::timeout(LEASE, guard.unlock()).await;
            continue;
        }
        let end = tokio::select! {
            _ = guard.lost() => {
                let lost_at = Instant::now();
                shared.record_lost(lost_at);
                lost_at
            }
            _ = tokio::time::sleep(hold_for) => {
                // Its section ends before the release is sent: from then
                // on the server may grant the name to another.
                let released_at = Instant::now();
                let _ = tokio::time::timeout(LEASE, guard.unlock()).await;
                released_at
            }
        };
        shared.record_section(Section { name, client: id, start: answered, end });
    }
}

/// A client on the Sentinels or the cluster, retried until the run stops.
async fn connect(nodes: &Nodes, shared: &Shared) -> Option<Client> {
    let urls =
        |ports: &[u16]| -> Vec<String> { ports.iter().map(|port| format!("redis://127.0.0.1:{port}")).collect() };
    let options = ClientOptions::default().with_watchdog_timeout(LEASE);
    while !shared.stop.load(Ordering::Relaxed) {
        let connected = match nodes {
            Nodes::Sentinels(ports) => {
                Client::connect_sentinel(urls(ports), MASTER, Default::default(), options.clone()).await
            }
            Nodes::Cluster(ports) => Client::connect_cluster(urls(ports), options.clone()).await,
        };
        match connected {
            Ok(client) => return Some(client),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
    None
}
