//! The cluster harness itself: six nodes with the module, routing helpers.

use testkit::Cluster;

#[test]
fn a_six_node_cluster_starts_with_the_module() {
    let cluster = Cluster::start(3, 1);
    let primary = cluster.primary_for(b"some-lock");
    let reply: redis::Value =
        redis::cmd("RLOCK.ACQUIRE").arg("some-lock").arg("me").query(&mut primary.connection()).unwrap();
    assert_eq!(reply, redis::Value::Nil);
    let replica = cluster.replica_for(b"some-lock");
    assert_ne!(replica.port(), primary.port());
}
