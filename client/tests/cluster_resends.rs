//! rlock-client on a real Redis Cluster, after the review of its hung
//! primary handling: an acquire resent after a timeout counts its replicas
//! on its own node, a hung node's abandoned requests do not pile up on the
//! client's connections, and a hand-back check the ACL refuses is reported.

#[macro_use]
mod common;

use common::recorder::Recorder;
use common::stalls::{calls, name_off, stallable_node, Resume};
use rlock_client::{Client, ClientOptions, ReplicaSync, RetryOptions};
use std::time::Duration;
use testkit::Cluster;

/// A replica-synced acquire that timed out (its primary stalled) is resent
/// with a `WAIT` right behind it, on the node that runs it. The `WAIT`
/// used to follow alone, through redis-rs, which sends a `WAIT` to every
/// primary: with another shard hung it got no reply, counted 0, and the
/// healthy grant was given back (`ReplicaSync` error).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resent_acquires_replicas_are_counted_on_its_own_node() {
    let cluster = Cluster::start_with(3, 1, stallable_node);
    let options = ClientOptions::default()
        .with_cluster_reply_timeout(Duration::from_millis(300))
        .with_replica_sync(ReplicaSync::Replicas { count: 1, timeout: Duration::from_millis(500) })
        .with_retry(RetryOptions::new(20, Duration::from_millis(100)));
    let client = Client::connect_cluster(cluster.urls(), options).await.unwrap();
    let stalled = cluster.primary_for(b"{sync}");
    let elsewhere = name_off(&cluster, "elsewhere", stalled.port());
    let hung = cluster.primary_for(elsewhere.as_bytes());
    // Connections to every node in use before the faults.
    client.lock("{sync}warm").lock().await.unwrap().unlock().await.unwrap();
    client.lock(elsewhere.as_str()).lock().await.unwrap().unlock().await.unwrap();

    // Another shard hangs (shorter than the node timeout: no failover),
    // and the acquire's own primary stalls past its bound (300 + 500 ms).
    hung.pause();
    let resume = Resume(hung);
    let stall = common::stall(stalled, 1.0).await;
    let lock = client.lock("{sync}resent");
    let tried = lock.try_lock(Duration::from_secs(5), Some(Duration::from_secs(30)));
    let tried = tokio::time::timeout(Duration::from_secs(8), tried).await.expect("try_lock pending 8 s");
    stall.await.unwrap();
    let guard = tried.expect("granted, its replica counted on its own node").expect("granted");
    assert!(!guard.is_lost());
    let pttl: i64 = redis::cmd("PTTL").arg("{sync}resent").query(&mut stalled.connection()).unwrap();
    assert!(pttl > 0, "the grant is still on its node (PTTL {pttl})");
    drop(resume);
    guard.unlock().await.unwrap();
}

/// Synced acquires queued behind one another on a hung node: each waits
/// one more bound per acquire ahead of it, but at most four, so that every
/// caller hears of the hung node within a few bounds (here 4 x 800 ms per
/// try) rather than one bound per acquire in flight (12 x 800 ms).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn synced_acquires_queued_on_a_hung_node_hear_of_it_in_bounded_time() {
    let cluster = Cluster::start_with(3, 0, stallable_node);
    let options = ClientOptions::default()
        .with_cluster_reply_timeout(Duration::from_millis(300))
        .with_replica_sync(ReplicaSync::Replicas { count: 1, timeout: Duration::from_millis(500) })
        .with_retry(RetryOptions::new(0, Duration::from_millis(100)));
    let client = Client::connect_cluster(cluster.urls(), options).await.unwrap();
    let hung = cluster.primary_for(b"{queued}");
    // Connections in use, and a map read, before the hang.
    let warm = client.lock("{queued}warm").try_lock(Duration::ZERO, Some(Duration::from_secs(10))).await;
    assert!(matches!(warm, Err(rlock_client::Error::ReplicaSync { .. })), "no replica: {warm:?}");

    hung.pause();
    let _resume = Resume(hung);
    let started = std::time::Instant::now();
    let callers: Vec<_> = (0..12)
        .map(|n| {
            let client = client.clone();
            tokio::spawn(async move {
                let lock = client.lock(format!("{{queued}}{n}").as_str());
                let tried = lock.try_lock(Duration::from_secs(30), Some(Duration::from_secs(10))).await;
                (tried.is_err(), started.elapsed())
            })
        })
        .collect();
    let mut answers = Vec::new();
    for caller in callers {
        let answer = tokio::time::timeout(Duration::from_secs(30), caller).await;
        answers.push(answer.expect("a caller still waiting 30 s into the hang").unwrap());
    }
    assert!(answers.iter().all(|(failed, _)| *failed), "an acquire on a hung node succeeded: {answers:?}");
    let slowest = answers.iter().map(|(_, took)| *took).max().unwrap();
    assert!(slowest < Duration::from_secs(7), "the last caller heard of the hung node after {slowest:?}");
}

/// A slot rerouted to the client's own connection to its node (after a
/// 1 s stall), whose node then hangs: each resend of an acquire that got
/// no reply used to queue behind the last on that connection, and the node
/// ran them all once it resumed. Now a node whose request timed out loses
/// its connection: the next try opens another (which a hung node does not
/// complete), and little is left queued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_nodes_abandoned_requests_do_not_pile_up() {
    // No replicas to read the count of before each acquire.
    let options = ClientOptions::default()
        .with_cluster_reply_timeout(Duration::from_millis(300))
        .with_replica_sync(ReplicaSync::Off);
    let cluster = Cluster::start_with(3, 0, stallable_node);
    let client = Client::connect_cluster(cluster.urls(), options).await.unwrap();
    let node = cluster.primary_for(b"{pile}");
    client.lock("{pile}warm").lock().await.unwrap().unlock().await.unwrap();
    // A 1 s stall while an acquire waits: the range is rerouted (and not
    // handed back for 5 s).
    let stall = common::stall(node, 1.0).await;
    let stalled = client.lock("{pile}stalled").try_lock(Duration::from_secs(5), Some(Duration::from_secs(10))).await;
    stall.await.unwrap();
    stalled.unwrap().expect("granted after the stall").unlock().await.unwrap();

    let (acquires, releases) = (calls(node, "rlock.acquire"), calls(node, "rlock.release"));
    node.pause();
    let resume = Resume(node);
    // The caller hears of the hang; the acquire is settled in the background.
    let lock = client.lock("{pile}hung");
    let tried = lock.try_lock(Duration::ZERO, Some(Duration::from_secs(10))).await.map(|g| g.is_some());
    assert!(!matches!(tried, Ok(true)), "granted by a hung node");
    // The background resends go on for 3 s more of hang.
    tokio::time::sleep(Duration::from_secs(3)).await;
    drop(resume);
    // Settled once it resumed: nobody took the grant, it is given back.
    let deadline = std::time::Instant::now() + common::PATIENCE;
    while calls(node, "rlock.release") == releases {
        assert!(std::time::Instant::now() < deadline, "the settled grant was never given back");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let ran = calls(node, "rlock.acquire") - acquires;
    assert!(ran <= 3, "the resumed node ran {ran} acquires sent during the hang");
}

/// A rerouted range's hand-back check (`EXISTS` through redis-rs) that the
/// ACL refuses (`NOPERM`) shows nothing of where redis-rs routes: the range
/// stays rerouted, and a warning says why (it used to fail silently).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_back_check_refused_by_the_acl_is_reported() {
    let recorder = Recorder::default();
    tracing::subscriber::set_global_default(recorder.clone()).unwrap();
    let cluster = Cluster::start_with(3, 0, stallable_node);
    let mut urls = Vec::new();
    for node in &cluster.nodes {
        let mut setuser = redis::cmd("ACL");
        setuser.arg("SETUSER").arg("limited").arg("on").arg(">secret").arg("~*").arg("&*").arg("+@all").arg("-exists");
        let _: () = setuser.query(&mut node.connection()).unwrap();
        urls.push(format!("redis://limited:secret@127.0.0.1:{}/", node.port()));
    }
    let options = ClientOptions::default()
        .with_cluster_reply_timeout(Duration::from_millis(300))
        .with_replica_sync(ReplicaSync::Off);
    let client = Client::connect_cluster(urls, options).await.unwrap();
    let node = cluster.primary_for(b"{acl}");
    client.lock("{acl}warm").lock().await.unwrap().unlock().await.unwrap();
    // A stall a little longer than the acquire's bound: the range is
    // rerouted, and the check answers once the node resumes.
    let stall = common::stall(node, 0.5).await;
    let stalled = client.lock("{acl}stalled").try_lock(Duration::from_secs(5), Some(Duration::from_secs(10))).await;
    stall.await.unwrap();
    stalled.unwrap().expect("granted after the stall").unlock().await.unwrap();
    let warned = || {
        let events = recorder.events.lock().unwrap();
        events.iter().any(|event| event.contains("level=WARN") && event.to_lowercase().contains("noperm"))
    };
    eventually!("a warning that the check was refused", warned());
}
