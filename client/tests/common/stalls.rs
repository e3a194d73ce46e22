//! A Redis Cluster whose nodes can be made to hang (SIGSTOP) or stall
//! (`DEBUG SLEEP`, see [`super::stall`]), for the cluster stall tests.

use rlock_client::{Client, ClientOptions};
use std::time::Duration;
use testkit::{Cluster, Server};

/// Resumes a SIGSTOPped node when dropped, also when the test fails.
pub struct Resume<'a>(pub &'a Server);

impl Drop for Resume<'_> {
    fn drop(&mut self) {
        self.0.resume();
    }
}

pub async fn wait_for_rounds(client: &Client, rounds: u64) {
    testkit::eventually!(format!("watchdog round {rounds}"), client.watchdog_stats().rounds >= rounds);
}

/// Nodes that take `DEBUG`, and a node timeout (10 s) longer than any
/// stall or hang of these tests: no failover.
pub fn stallable_node(node: testkit::ServerBuilder) -> testkit::ServerBuilder {
    node.config("enable-debug-command", "local").config("cluster-node-timeout", "10000")
}

/// Three primaries that take `DEBUG` (no replicas), and a client with the
/// watchdog timeout `watchdog` that gives up on a node after 300 ms.
pub async fn stallable_cluster(watchdog: Duration) -> (Cluster, Client) {
    let cluster = Cluster::start_with(3, 0, stallable_node);
    let options =
        ClientOptions::default().with_watchdog_timeout(watchdog).with_cluster_reply_timeout(Duration::from_millis(300));
    let client = Client::connect_cluster(cluster.urls(), options).await.unwrap();
    (cluster, client)
}

/// The first `prefix:N` name whose primary is not `port`.
pub fn name_off(cluster: &Cluster, prefix: &str, port: u16) -> String {
    (0..).map(|n| format!("{prefix}:{n}")).find(|name| cluster.primary_for(name.as_bytes()).port() != port).unwrap()
}

/// A command's calls on `node` so far, from `INFO commandstats`.
pub fn calls(node: &Server, command: &str) -> u64 {
    testkit::calls(&mut node.connection(), command)
}
