//! rlock-client's read-write lock against a real redis-server with the
//! module: sharing and exclusion, re-entry, the watchdog renewing both
//! sides, wake-ups, and readers and writers on Redisson's scripts.

#[macro_use]
mod common;

use common::admin;
use redis::AsyncCommands;
use rlock_client::{Client, ClientOptions};
use std::time::Duration;
use testkit::{RwScripts, Server};

const WATCHDOG: Duration = Duration::from_millis(600);

async fn client(server: &Server) -> Client {
    Client::connect(server.client(), ClientOptions::default().with_watchdog_timeout(WATCHDOG)).await.expect("client")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_share_and_a_writer_excludes_them() {
    let server = Server::start();
    let client = client(&server).await;
    let (a, b) = (client.read_write_lock("cfg"), client.read_write_lock("cfg"));
    let read_a = a.read().lock().await.unwrap();
    let read_b = b.read().try_lock(Duration::ZERO, None).await.unwrap().expect("readers share");
    assert!(a.write().try_lock(Duration::from_millis(30), None).await.unwrap().is_none(), "a writer waits for readers");
    read_a.unlock().await.unwrap();
    read_b.unlock().await.unwrap();

    let write = a.write().lock().await.unwrap();
    assert!(b.read().try_lock(Duration::from_millis(30), None).await.unwrap().is_none(), "a writer excludes readers");
    assert!(b.write().try_lock(Duration::ZERO, None).await.unwrap().is_none(), "and writers");
    // The writer may read too, and keeps the read once the write goes.
    let read_under_write = a.read().try_lock(Duration::ZERO, None).await.unwrap().expect("write then read");
    write.unlock().await.unwrap();
    assert!(a.read().is_held().await.unwrap() && !a.write().is_held().await.unwrap());
    assert!(b.read().try_lock(Duration::ZERO, None).await.unwrap().is_some(), "downgraded to a read lock");
    read_under_write.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchdog_renews_both_sides_in_its_rounds() {
    let server = Server::start();
    let client = client(&server).await;
    let (rw, other) = (client.read_write_lock("renewed"), client.read_write_lock("renewed-2"));
    let read = rw.read().lock().await.unwrap();
    let again = rw.read().lock().await.unwrap();
    let write = other.write().lock().await.unwrap();
    let plain = client.lock("plain").lock().await.unwrap();
    let fair = client.fair_lock("fair").lock().await.unwrap();
    tokio::time::sleep(WATCHDOG * 3).await;
    for guard in [&read, &again, &write, &plain, &fair] {
        assert!(!guard.is_lost(), "renewed past three leases");
    }
    assert_eq!(rw.read().hold_count().await.unwrap(), 2);
    // Each read hold's own timeout key is renewed, not only the hash.
    let mut con = admin(&server).await;
    for n in [1, 2] {
        let key = rlock_protocol::rwlock_timeout_key(b"renewed", rw.read().owner(), n);
        let pttl: i64 = con.pttl(key).await.unwrap();
        assert!(pttl > 0, "read hold {n} has its lease ({pttl})");
    }
    let stats = client.watchdog_stats();
    assert_eq!(stats.locks, 4, "one watchdog for every kind: {stats:?}");
    for guard in [read, again, write, plain, fair] {
        guard.unlock().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_release_wakes_every_waiter() {
    let server = Server::start();
    let client = client(&server).await;
    let writer = client.read_write_lock("wake").write().lock().await.unwrap();
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let read = client.read_write_lock("wake").read();
            tokio::spawn(async move { read.lock_with_lease(Duration::from_secs(60)).await })
        })
        .collect();
    eventually!("the readers waited", common::numsub(&server, b"redisson_rwlock:{wake}").await == 1);
    tokio::time::sleep(Duration::from_millis(50)).await;
    writer.unlock().await.unwrap();
    // The lease (600 ms) is long: only the `1` message wakes them in time.
    for reader in readers {
        let guard = tokio::time::timeout(Duration::from_millis(400), reader).await.expect("woken").unwrap().unwrap();
        guard.unlock().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_readers_and_rlock_readers_share_and_a_writer_excludes_both() {
    let server = Server::start();
    let client = client(&server).await;
    let scripts = RwScripts::default();
    scripts.load(&mut server.connection()).unwrap();
    let mut con = admin(&server).await;
    let java_read: Option<i64> = scripts.read_acquire(b"mixed", b"java:1", 30_000).query_async(&mut con).await.unwrap();
    assert_eq!(java_read, None, "the Java reader holds");
    let rw = client.read_write_lock("mixed");
    let rust_read = rw.read().try_lock(Duration::ZERO, None).await.unwrap().expect("an rlock reader shares it");
    let java_write: Option<i64> =
        scripts.write_acquire(b"mixed", b"java:2", 30_000).query_async(&mut con).await.unwrap();
    assert!(java_write.is_some(), "a Java writer waits for both readers");
    rust_read.unlock().await.unwrap();
    let waiting_writer = rw.write();
    let writing = tokio::spawn(async move { waiting_writer.lock().await });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!writing.is_finished(), "an rlock writer waits for the Java reader");
    let _: Option<i64> = scripts.read_release(b"mixed", b"java:1", b"r1").query_async(&mut con).await.unwrap();
    let write = tokio::time::timeout(Duration::from_secs(5), writing).await.unwrap().unwrap().unwrap();
    let java_read: Option<i64> = scripts.read_acquire(b"mixed", b"java:1", 30_000).query_async(&mut con).await.unwrap();
    assert!(java_read.is_some(), "the rlock writer excludes Java readers");
    write.unlock().await.unwrap();
}
