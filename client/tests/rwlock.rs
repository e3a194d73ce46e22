//! The read-write lock (RRW.*) through rlock-client, against a real
//! redis-server with the module; and one watchdog round for every kind.

mod common;

use common::{admin, numsub};
use redis::AsyncCommands;
use rlock_client::{Client, ClientOptions, Kind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use testkit::{eventually, RwScripts, Server, PATIENCE};

const WATCHDOG: Duration = Duration::from_millis(600);

/// Longer than any test: a holder that must be released, never expire.
const LONG_LEASE: Duration = Duration::from_secs(60);

const SHORT: Duration = Duration::from_millis(50);

async fn client(server: &Server) -> Client {
    let options = ClientOptions::default().with_watchdog_timeout(WATCHDOG);
    Client::connect(server.client(), options).await.expect("client")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_share_and_a_writer_excludes_everyone() {
    let server = Server::shared();
    let client = client(&server).await;
    let (a, b, c) = (client.read_write_lock("rw"), client.read_write_lock("rw"), client.read_write_lock("rw"));
    let read_a = a.read().lock().await.unwrap();
    let read_b = b.read().try_lock(Duration::ZERO, None).await.unwrap().expect("readers share");
    assert!(a.read().is_locked().await.unwrap() && !a.write().is_locked().await.unwrap());
    assert!(c.write().try_lock(SHORT, None).await.unwrap().is_none(), "a writer waits for the readers");
    read_a.unlock().await.unwrap();
    assert!(c.write().try_lock(SHORT, None).await.unwrap().is_none(), "for every reader");
    read_b.unlock().await.unwrap();

    let write = c.write().try_lock(Duration::ZERO, None).await.unwrap().expect("free again");
    assert!(a.read().try_lock(SHORT, None).await.unwrap().is_none(), "a writer excludes readers");
    assert!(b.write().try_lock(SHORT, None).await.unwrap().is_none(), "and writers");
    assert_eq!(c.write().hold_count().await.unwrap(), 1);
    assert_eq!(c.read().hold_count().await.unwrap(), 0);
    write.unlock().await.unwrap();
    assert!(!c.write().is_locked().await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_writer_may_read_and_its_reads_outlive_its_write() {
    let server = Server::shared();
    let client = client(&server).await;
    let (rw, other) = (client.read_write_lock("downgrade"), client.read_write_lock("downgrade"));
    let write = rw.write().lock().await.unwrap();
    let inner_write = rw.write().try_lock(Duration::ZERO, None).await.unwrap().expect("write re-entry");
    let read = rw.read().try_lock(Duration::ZERO, None).await.unwrap().expect("write -> read re-entry");
    assert_eq!((rw.read().hold_count().await.unwrap(), rw.write().hold_count().await.unwrap()), (1, 2));
    assert!(other.read().try_lock(SHORT, None).await.unwrap().is_none());
    inner_write.unlock().await.unwrap();
    write.unlock().await.unwrap();
    assert!(!read.is_lost(), "the read hold goes on");
    let shared = other.read().try_lock(Duration::ZERO, None).await.unwrap().expect("read-locked now");
    assert!(other.write().try_lock(SHORT, None).await.unwrap().is_none());
    read.unlock().await.unwrap();
    shared.unlock().await.unwrap();
    assert!(!rw.read().is_locked().await.unwrap());
}

/// `count` waiters, each in a client of its own (so each one's subscription
/// shows), wait for the side `write` of "wake"; returns once all wait.
async fn waiters(server: &Server, count: usize, write: bool) -> Vec<tokio::task::JoinHandle<()>> {
    let channel = rlock_protocol::rwlock_channel(b"wake");
    let mut tasks = Vec::new();
    for n in 0..count {
        let client = client(server).await;
        let rw = client.read_write_lock("wake");
        tasks.push(tokio::spawn(async move {
            let _client = client; // a lock handle does not keep its client open
                                  // Holds on: readers that share must all get in together.
            if write {
                std::mem::forget(rw.write().lock().await.unwrap());
            } else {
                std::mem::forget(rw.read().lock().await.unwrap());
            }
        }));
        eventually!(format!("waiter {n} subscribed"), numsub(server, &channel).await == n as i64 + 1);
    }
    tasks
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_release_wakes_every_waiter() {
    let server = Server::shared();
    let client = client(&server).await;
    let write = client.read_write_lock("wake").write().lock_with_lease(LONG_LEASE).await.unwrap();
    let readers = waiters(&server, 3, false).await;
    write.unlock().await.unwrap();
    // Long before the 60 s lease would have let them in.
    for reader in readers {
        tokio::time::timeout(PATIENCE, reader).await.expect("woken by the release").unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_release_that_frees_the_lock_wakes_a_writer() {
    let server = Server::shared();
    let client = client(&server).await;
    let read = client.read_write_lock("wake").read().lock_with_lease(LONG_LEASE).await.unwrap();
    let writers = waiters(&server, 1, true).await;
    read.unlock().await.unwrap();
    for writer in writers {
        tokio::time::timeout(PATIENCE, writer).await.expect("woken by the release").unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_release_that_frees_the_lock_wakes_every_reader_of_a_client() {
    let server = Server::shared();
    let (holder, waiting) = (client(&server).await, client(&server).await);
    let rw = holder.read_write_lock("readers");
    let write = rw.write().lock_with_lease(LONG_LEASE).await.unwrap();
    let read = rw.read().lock_with_lease(LONG_LEASE).await.unwrap();
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let lock = waiting.read_write_lock("readers").read();
            tokio::spawn(async move { std::mem::forget(lock.lock().await.unwrap()) })
        })
        .collect();
    // Two tries each (before and after subscribing): both wait now.
    eventually!("both readers wait", testkit::calls_async(&mut admin(&server).await, "rrw.acquire").await == 2 + 2 * 2);
    // Dropping the write leaves a read lock, silently (as Redisson): the
    // readers sleep on; the last read release frees it and publishes `0`.
    write.unlock().await.unwrap();
    read.unlock().await.unwrap();
    for reader in readers {
        tokio::time::timeout(PATIENCE, reader).await.expect("woken, not at the 60 s lease").unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_exclude_each_other_and_readers_never_overlap_a_writer() {
    let server = Server::shared();
    let client = client(&server).await;
    let mut con = admin(&server).await;
    let _: () = con.set("rw:counter", 0).await.unwrap();
    let (writing, reading, most_readers) =
        (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let mut tasks = Vec::new();
    for n in 0..8 {
        let rw = client.read_write_lock("stress");
        let (writing, reading, most_readers, mut con) =
            (writing.clone(), reading.clone(), most_readers.clone(), con.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..10 {
                if n % 2 == 0 {
                    let guard = rw.write().lock().await.unwrap();
                    assert_eq!(writing.fetch_add(1, Ordering::SeqCst), 0, "one writer at a time");
                    assert_eq!(reading.load(Ordering::SeqCst), 0, "no reader while writing");
                    // A read-modify-write that only exclusion keeps whole.
                    let value: i64 = con.get("rw:counter").await.unwrap();
                    // Stays inside a while, so that an overlap would show: not a wait.
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    let _: () = con.set("rw:counter", value + 1).await.unwrap();
                    writing.fetch_sub(1, Ordering::SeqCst);
                    guard.unlock().await.unwrap();
                } else {
                    let guard = rw.read().lock().await.unwrap();
                    let readers = reading.fetch_add(1, Ordering::SeqCst) + 1;
                    most_readers.fetch_max(readers, Ordering::SeqCst);
                    assert_eq!(writing.load(Ordering::SeqCst), 0, "no writer while reading");
                    // Stays inside a while, so that an overlap would show: not a wait.
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    reading.fetch_sub(1, Ordering::SeqCst);
                    guard.unlock().await.unwrap();
                }
            }
        }));
    }
    for task in tasks {
        tokio::time::timeout(PATIENCE * 3, task).await.expect("no deadlock").unwrap();
    }
    assert_eq!(con.get::<_, i64>("rw:counter").await.unwrap(), 40, "no write lost");
    assert!(most_readers.load(Ordering::SeqCst) > 1, "readers held it together");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_watchdog_round_renews_every_kind() {
    let server = Server::shared();
    let client = client(&server).await;
    let plain = client.lock("kinds:plain").lock().await.unwrap();
    let fair = client.fair_lock("kinds:fair").lock().await.unwrap();
    let read = client.read_write_lock("kinds:read").read().lock().await.unwrap();
    let rw = client.read_write_lock("kinds:write");
    let (write, write_read) = (rw.write().lock().await.unwrap(), rw.read().lock().await.unwrap());
    let start = client.watchdog_stats();
    assert_eq!(start.locks, 5);
    // Five leases' worth: every hold lives only by renewal (time is under
    // test: the rounds are counted against it).
    tokio::time::sleep(WATCHDOG * 5).await;
    let stats = client.watchdog_stats();
    assert_eq!(stats.lost, 0);
    let rounds = stats.rounds - start.rounds;
    assert!((1..=16).contains(&rounds), "one round per period for all five, not one each: {rounds}");
    assert!(!plain.is_lost() && !fair.is_lost() && !read.is_lost() && !write.is_lost() && !write_read.is_lost());
    assert_eq!(plain.lock().hold_count().await.unwrap(), 1);
    assert_eq!(fair.lock().hold_count().await.unwrap(), 1);
    assert_eq!(read.lock().hold_count().await.unwrap(), 1);
    assert_eq!((write.lock().hold_count().await.unwrap(), write_read.lock().hold_count().await.unwrap()), (1, 1));
    // The read hold's own timeout key is renewed too, not only the hash.
    let timeout_key = rlock_protocol::rwlock_timeout_key(b"kinds:read", read.lock().owner(), 1);
    let pttl: i64 = admin(&server).await.pttl(timeout_key).await.unwrap();
    assert!(pttl > 0, "timeout key alive: {pttl}");
    for unlocked in [
        plain.unlock().await,
        fair.unlock().await,
        read.unlock().await,
        write_read.unlock().await,
        write.unlock().await,
    ] {
        unlocked.unwrap();
    }
    assert_eq!(client.watchdog_stats().locks, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_readers_and_rlock_readers_share_and_a_writer_excludes_both() {
    let server = Server::shared();
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
    let tried = testkit::calls_async(&mut con, "rrw.acquire").await;
    let writing = tokio::spawn(async move { waiting_writer.lock().await });
    eventually!("the rlock writer's try", testkit::calls_async(&mut con, "rrw.acquire").await > tried);
    let mode: String = con.hget("mixed", "mode").await.unwrap();
    assert_eq!(mode, "read", "an rlock writer waits for the Java reader");
    assert!(!writing.is_finished(), "an rlock writer waits for the Java reader");
    let _: Option<i64> = scripts.read_release(b"mixed", b"java:1", b"r1").query_async(&mut con).await.unwrap();
    let write = tokio::time::timeout(Duration::from_secs(5), writing).await.unwrap().unwrap().unwrap();
    let java_read: Option<i64> = scripts.read_acquire(b"mixed", b"java:1", 30_000).query_async(&mut con).await.unwrap();
    assert!(java_read.is_some(), "the rlock writer excludes Java readers");
    write.unlock().await.unwrap();
}

/// A reader's two holds, a short fixed lease and then a long one: the
/// server counts each read hold by a timeout key numbered by the owner's
/// count, and a read release drops the last numbered (the long one's, here)
/// whichever hold it was, the lock then living as long as the keys left.
/// The short hold's release must leave the long hold its lease, or the
/// long one must be told lost: not a lock that ends under a hold the client
/// still counts as good, with a writer let in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn releasing_a_readers_earlier_hold_leaves_the_later_one_its_lease() {
    let server = Server::shared();
    // A watchdog whose checks of fixed holds come long after these leases.
    let options = ClientOptions::default().with_watchdog_timeout(LONG_LEASE);
    let client = Client::connect(server.client(), options).await.unwrap();
    let read = client.read_write_lock("rw-two-leases").read();
    let short = read.lock_with_lease(Duration::from_millis(800)).await.unwrap();
    let long = read.lock_with_lease(LONG_LEASE).await.unwrap();
    short.unlock().await.unwrap();
    let pttl: i64 = redis::cmd("PTTL").arg("rw-two-leases").query_async(&mut admin(&server).await).await.unwrap();
    let writer = client.read_write_lock("rw-two-leases").write();
    if pttl < 2_000 {
        // The lock ends with the short lease: a writer gets in, beside a
        // read hold that nothing reported lost.
        eventually!("the lock's end", Duration::from_secs(3), {
            writer.try_lock(Duration::ZERO, Some(LONG_LEASE)).await.unwrap().is_some()
        });
        assert!(
            long.is_lost(),
            "the lock lived {pttl} ms after the short hold's release, then a writer took it; the long hold not lost"
        );
    }
    assert!(pttl > LONG_LEASE.as_millis() as i64 - 5_000, "the lock's lease after the release: {pttl} ms");
    assert!(writer.try_lock(Duration::ZERO, None).await.unwrap().is_none(), "a writer beside the reader");
    assert!(!long.is_lost(), "the long read hold was lost");
    long.unlock().await.unwrap();
}

/// A writer that also reads: the two sides count apart but share the
/// lock's one expiry, which a release of either sets (a read release to
/// the read keys left, a write release to its lease). Releasing a short
/// hold of one side must not cut the other side's long hold short.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_of_one_side_leaves_the_other_sides_holds_their_lease() {
    let server = Server::shared();
    let options = ClientOptions::default().with_watchdog_timeout(LONG_LEASE);
    let client = Client::connect(server.client(), options).await.unwrap();
    let short = Duration::from_millis(800);
    for (long_side, name) in [(Kind::Write, "rw-sides:read-released"), (Kind::Read, "rw-sides:write-released")] {
        let rw = client.read_write_lock(name);
        let (long, short_side) = match long_side {
            Kind::Write => (rw.write(), rw.read()),
            _ => (rw.read(), rw.write()),
        };
        // The write side first (a reader cannot take it), then the others.
        let first = rw.write().lock_with_lease(if long_side == Kind::Write { LONG_LEASE } else { short }).await;
        let held = long.lock_with_lease(LONG_LEASE).await.unwrap();
        let outer = short_side.lock_with_lease(short).await.unwrap();
        let inner = short_side.lock_with_lease(short).await.unwrap();
        inner.unlock().await.unwrap();
        let pttl: i64 = redis::cmd("PTTL").arg(name).query_async(&mut admin(&server).await).await.unwrap();
        assert!(
            pttl > LONG_LEASE.as_millis() as i64 - 5_000 || held.is_lost(),
            "{long_side:?} held for 60 s: the lock's lease after a release of the other side: {pttl} ms"
        );
        drop((first, outer));
        held.unlock().await.unwrap();
    }
}

/// The watchdog renews a writer's write hold with `RRW.RENEW`, which sets
/// every read key of the owner to the lease it sends: it must not cut the
/// writer's long fixed read hold to the watchdog's lease, or that read key
/// runs out once the write goes, and another reader's release then frees
/// the lock under the read hold (a release counts a hold by its key).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_watchdogs_write_renewals_leave_the_writers_read_hold_its_lease() {
    let server = Server::shared();
    let client = client(&server).await; // a 600 ms watchdog, renewing every 200 ms
    let rw = client.read_write_lock("rw-renewed-sides");
    let write = rw.write().lock().await.unwrap();
    let read = rw.read().lock_with_lease(LONG_LEASE).await.unwrap();
    let rounds = client.watchdog_stats().rounds;
    common::stalls::wait_for_rounds(&client, rounds + 2).await;
    write.unlock().await.unwrap();
    let key = format!("{{rw-renewed-sides}}:{}:rwlock_timeout:1", String::from_utf8_lossy(rw.read().owner()));
    let pttl: i64 = redis::cmd("PTTL").arg(&key).query_async(&mut admin(&server).await).await.unwrap();
    if pttl < 2_000 {
        // Once the key is gone, another reader's release frees the lock.
        eventually!("the read key's end", { !common::hostile::exists(&server, &key).await });
        let other = client.read_write_lock("rw-renewed-sides");
        other.read().lock().await.unwrap().unlock().await.unwrap();
        let writer = other.write().try_lock(Duration::ZERO, None).await.unwrap();
        assert!(read.is_lost(), "a writer got in: {}, beside a 60 s read hold not lost", writer.is_some());
    }
    assert!(pttl > LONG_LEASE.as_millis() as i64 - 5_000, "the read hold's key after the write's renewals: {pttl} ms");
    read.unlock().await.unwrap();
}
