//! Settling a lost acquire reply, and the release latch fallback, as a
//! hostile user would break them, against a real redis-server.

mod common;

use common::{admin, stall, stallable_server};
use redis::Commands;
use rlock_client::{Client, ClientOptions, Error, ReplicaSync};
use std::time::Duration;
use testkit::{eventually, Server};

/// An acquire whose `[RLOCK.ACQUIRE, WAIT]` reply timed out is settled by
/// resending it under its id; the WAIT must be asked again, or a lock no
/// replica acknowledged is handed out as a guard (docs/client.md: "When
/// fewer replicas acknowledge, the client releases the lock again and
/// returns Error::ReplicaSync").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settled_acquire_still_needs_the_replicas() {
    let primary = Server::builder().config("enable-debug-command", "yes").start();
    let replica = Server::shared();
    replica.replicate(&primary);
    let sync = ReplicaSync::Replicas { count: 1, timeout: Duration::from_millis(200) };
    let client = Client::connect(primary.client(), ClientOptions::default().with_replica_sync(sync)).await.unwrap();
    let lock = client.lock("review2:synced");
    // Opens the replica sync connection.
    lock.lock().await.unwrap().unlock().await.unwrap();

    // The replica cannot acknowledge; the primary stalls longer than the
    // sync connection's response timeout (WAIT timeout + 1 s).
    replica.pause();
    let stalled = stall(&primary, 1.6).await;
    let acquired = lock.lock().await;
    stalled.await.unwrap();
    let held = lock.hold_count().await.unwrap();
    replica.resume();
    assert!(acquired.is_err(), "no replica acknowledged, yet lock() returned {acquired:?} (server hold count {held})");
}

/// An ACL user whose key patterns leave out `rlock_acquire_record:*`
/// acquires fenced locks without request ids. Such an acquire whose reply
/// is lost (a stall longer than the response timeout) is not granted as
/// far as its caller knows (the error, or no lock within its wait); the
/// grant it made is a level the client does not count, and the owner's
/// next acquire sees it in its reply and gives it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_acquire_without_an_id_is_given_back_by_the_next_acquire() {
    let server = stallable_server();
    let mut con = server.connection();
    let patterns = ["~unnamed", "~redisson_unlock_latch:*", "~redisson_lock_token:*"];
    let client = recordless_client(&server, "nameless", &patterns).await;
    let lock = client.fenced_lock("unnamed");
    // Learns that it may not record: later acquires go without an id.
    lock.lock().await.unwrap().unlock().await.unwrap();

    let stalled = stall(&server, 0.5).await;
    let lost = lock.try_lock(Duration::ZERO, None).await;
    stalled.await.unwrap();
    assert!(matches!(lost, Ok(None) | Err(_)), "the reply was lost, yet: {lost:?}");
    let count = |con: &mut redis::Connection| con.hget::<_, _, Option<i64>>("unnamed", lock.owner()).unwrap();
    eventually!("the lost acquire was granted on the server", count(&mut con) == Some(1));
    let guard = lock.lock().await.unwrap();
    // Given back after the guard is handed over, before this lock's next call.
    eventually!("the level nothing counted was given back", count(&mut con) == Some(1));
    guard.unlock().await.unwrap();
    assert!(!con.exists::<_, bool>("unnamed").unwrap(), "free after the one unlock");
}

/// The same user's plain lock needs no record: its acquire names the
/// owner's count (`HOLDS`), so a lost reply is settled by a resend, which
/// the server answers from that count. The grant is the caller's, or given
/// back when the caller stopped waiting; never a level nothing counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_acquire_of_a_plain_lock_is_settled_without_a_record() {
    let server = stallable_server();
    let mut con = server.connection();
    let client = recordless_client(&server, "countless", &["~counted", "~redisson_unlock_latch:*"]).await;
    let lock = client.lock("counted");
    lock.lock().await.unwrap().unlock().await.unwrap();

    let stalled = stall(&server, 0.5).await;
    let tried = lock.try_lock(Duration::ZERO, None).await;
    stalled.await.unwrap();
    let count = |con: &mut redis::Connection| con.hget::<_, _, Option<i64>>("counted", lock.owner()).unwrap();
    let guard = match tried {
        Ok(Some(guard)) => guard,
        // The caller was told of the lost reply; the settled grant went back.
        Ok(None) | Err(_) => {
            eventually!("the settled grant was given back", count(&mut con).is_none());
            lock.lock().await.unwrap()
        }
    };
    assert_eq!(count(&mut con), Some(1), "one level, however the reply went");
    guard.unlock().await.unwrap();
    assert!(!con.exists::<_, bool>("counted").unwrap(), "free after the one unlock");
    let denied: Vec<redis::Value> = redis::cmd("ACL").arg("LOG").query(&mut con).unwrap();
    assert!(denied.is_empty(), "no key was refused: {denied:?}");
}

/// A client of the ACL user `user` (on the keys of `key_patterns`) whose
/// replies time out after 100 ms.
async fn recordless_client(server: &Server, user: &str, key_patterns: &[&str]) -> Client {
    let redis = redis::Client::open(acl_user_url(server, user, key_patterns)).unwrap();
    let config = redis::aio::ConnectionManagerConfig::new().set_response_timeout(Some(Duration::from_millis(100)));
    let connection = redis::aio::ConnectionManager::new_with_config(redis.clone(), config).await.unwrap();
    Client::with_connection(redis, connection, ClientOptions::default()).unwrap()
}

/// A user with every command and channel, on the keys of `key_patterns`.
fn acl_user_url(server: &Server, user: &str, key_patterns: &[&str]) -> String {
    let mut con = server.connection();
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg(user)
        .arg("on")
        .arg(">pw")
        .arg(key_patterns)
        .arg("&*")
        .arg("+@all")
        .query(&mut con)
        .unwrap();
    format!("redis://{user}:pw@127.0.0.1:{}/", server.port())
}

/// A release during a stall longer than one response timeout: retried with
/// its latch, it succeeds once the server answers.
async fn unlock_through_a_stall(server: &Server, client: &Client, name: &str) -> rlock_client::Result<()> {
    let guard = client.lock(name).lock().await.unwrap();
    let stalled = stall(server, 0.8).await;
    let unlocked = guard.unlock().await;
    stalled.await.unwrap();
    unlocked
}

/// Control: with the latch, a release survives a 0.8 s stall.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_a_latched_release_survives_a_stall() {
    let server = stallable_server();
    let client = Client::open(&acl_user_url(&server, "worker", &["~*"])).await.unwrap();
    unlock_through_a_stall(&server, &client, "review2:ok").await.unwrap();
}

/// A NOPERM about the lock key itself (an ACL narrowed while a lock is
/// held) is taken for a refused latch key: the client stops sending
/// latches for every lock, and later releases are no longer retryable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_noperm_on_the_lock_key_does_not_disable_latches() {
    let server = stallable_server();
    let client = Client::open(&acl_user_url(&server, "worker", &["~*"])).await.unwrap();
    let forbidden = client.lock("forbidden:1").lock().await.unwrap();
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("worker")
        .arg("resetkeys")
        .arg("~review2:*")
        .arg("~redisson_unlock_latch:*")
        .query_async(&mut admin(&server).await)
        .await
        .unwrap();
    let refused = forbidden.unlock().await;
    assert!(matches!(&refused, Err(Error::Redis(err)) if err.code() == Some("NOPERM")), "{refused:?}");

    let unlocked = unlock_through_a_stall(&server, &client, "review2:ok").await;
    assert!(unlocked.is_ok(), "after an unrelated NOPERM, a release during a stall failed: {unlocked:?}");
}

/// A user whose key patterns leave out `redisson_unlock_latch:*` (as
/// docs/client.md allows) still unlocks RLocks and fenced locks: the
/// server refuses the declared latch key in its own words, which Redis
/// 7.2 and Valkey changed ("No permissions to access a key"), and the
/// client releases again without the latch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_without_the_latch_pattern_unlocks_without_a_latch() {
    let server = Server::builder().start();
    let mut con = server.connection();
    let patterns = ["~latchless:*", "~redisson_lock_token:*"];
    for (user, fenced) in [("latchless-plain", false), ("latchless-fenced", true)] {
        // A fresh client each: the first release is the one that finds out.
        let client = Client::open(&acl_user_url(&server, user, &patterns)).await.unwrap();
        let name = format!("latchless:{user}");
        let unlocked = match fenced {
            false => client.lock(name.as_str()).lock().await.unwrap().unlock().await,
            true => client.fenced_lock(name.as_str()).lock().await.unwrap().unlock().await,
        };
        assert!(unlocked.is_ok(), "{user}: the release without a latch failed: {unlocked:?}");
        assert!(!con.exists::<_, bool>(&name).unwrap(), "{user}: the lock was released");
    }
    // The latch taken away between the lock and its unlock.
    let client =
        Client::open(&acl_user_url(&server, "narrowed", &["~latchless:*", "~redisson_unlock_latch:*"])).await.unwrap();
    let guard = client.lock("latchless:narrowed").lock().await.unwrap();
    let _: () = redis::cmd("ACL")
        .arg(&["SETUSER", "narrowed", "resetkeys", "~latchless:*"])
        .query_async(&mut admin(&server).await)
        .await
        .unwrap();
    let unlocked = guard.unlock().await;
    assert!(unlocked.is_ok(), "narrowed: the release without a latch failed: {unlocked:?}");
    assert!(!con.exists::<_, bool>("latchless:narrowed").unwrap(), "narrowed: the lock was released");
}

/// The same in a cluster: each release refused its latch key on whichever
/// primary holds the lock is sent again without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_cluster_a_user_without_the_latch_pattern_unlocks_without_a_latch() {
    let cluster = testkit::Cluster::start(3, 0);
    let port = |url: &String| url.trim_end_matches('/').rsplit(':').next().unwrap().parse::<u16>().unwrap();
    let mut urls = Vec::new();
    for url in cluster.urls() {
        let user_url = acl_user_url(cluster.node(port(&url)), "latchless", &["~latchless:*", "~redisson_lock_token:*"]);
        urls.push(user_url);
    }
    let client = Client::connect_cluster(urls, ClientOptions::default()).await.unwrap();
    for name in ["latchless:a", "latchless:b", "latchless:c", "latchless:d"] {
        let unlocked = client.lock(name).lock().await.unwrap().unlock().await;
        assert!(unlocked.is_ok(), "{name}: the release without a latch failed: {unlocked:?}");
        let unlocked = client.fenced_lock(format!("{name}:fenced")).lock().await.unwrap().unlock().await;
        assert!(unlocked.is_ok(), "{name} (fenced): the release without a latch failed: {unlocked:?}");
    }
}
