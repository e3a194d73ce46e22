//! A settle read that was "ordered" after a timeout but
//! ran on a new connection (another call on the shared connection noticed
//! the drop and reconnected while the settle slept between reads).

mod common;

use common::clients::{connection_that_ran, idle_over_a_second};

use rlock_client::{Client, ClientOptions, RetryOptions};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use testkit::{eventually, Cluster, Server};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// A TCP proxy that can hold (not forward) what clients send on the
/// connections open now, and cut them, discarding what it held.
struct Proxy {
    port: u16,
    held: Arc<Mutex<Vec<u8>>>,
    holding: watch::Sender<bool>,
    cut: watch::Sender<u64>,
    /// The next request containing these bytes is passed on, and its
    /// connection cut as the server's reply comes, which is never passed on.
    cut_after: Arc<Mutex<Option<Vec<u8>>>>,
    /// Run when that reply comes, before the connection is cut.
    on_cut: Arc<Mutex<Option<OnCut>>>,
}

/// What a proxy runs as it cuts a connection.
type OnCut = Box<dyn FnOnce() + Send>;

impl Proxy {
    async fn start(upstream: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let held = Arc::new(Mutex::new(Vec::new()));
        let (holding, _) = watch::channel(false);
        let (cut, _) = watch::channel(0);
        let cut_after = Arc::new(Mutex::new(None::<Vec<u8>>));
        let on_cut = Arc::new(Mutex::new(None::<OnCut>));
        let proxy = Self {
            port,
            held: held.clone(),
            holding: holding.clone(),
            cut: cut.clone(),
            cut_after: cut_after.clone(),
            on_cut: on_cut.clone(),
        };
        tokio::spawn(async move {
            loop {
                let (client, _) = listener.accept().await.unwrap();
                let server = TcpStream::connect(("127.0.0.1", upstream)).await.unwrap();
                let (mut client_read, mut client_write) = client.into_split();
                let (mut server_read, mut server_write) = server.into_split();
                let (holding, held) = (holding.subscribe(), held.clone());
                let mut cut_up = cut.subscribe();
                let mut cut_down = cut.subscribe();
                let (cut_after, armed) = (cut_after.clone(), Arc::new(AtomicBool::new(false)));
                let (disarm, on_cut) = (armed.clone(), on_cut.clone());
                tokio::spawn(async move {
                    let mut buffer = [0; 4096];
                    loop {
                        tokio::select! {
                            read = client_read.read(&mut buffer) => {
                                let Ok(n @ 1..) = read else { return };
                                let sent = &buffer[..n];
                                if take_needle(&cut_after, sent) {
                                    armed.store(true, Ordering::SeqCst);
                                }
                                if *holding.borrow() {
                                    held.lock().unwrap().extend_from_slice(&buffer[..n]);
                                } else if server_write.write_all(&buffer[..n]).await.is_err() {
                                    return;
                                }
                            }
                            _ = cut_up.changed() => return,
                        }
                    }
                });
                tokio::spawn(async move {
                    let mut buffer = [0; 4096];
                    loop {
                        tokio::select! {
                            read = server_read.read(&mut buffer) => {
                                let Ok(n @ 1..) = read else { return };
                                if disarm.load(Ordering::SeqCst) {
                                    // The reply is dropped, and the client's connection closed.
                                    let on_cut = on_cut.lock().unwrap().take();
                                    if let Some(on_cut) = on_cut {
                                        on_cut();
                                    }
                                    return;
                                }
                                if client_write.write_all(&buffer[..n]).await.is_err() {
                                    return;
                                }
                            }
                            _ = cut_down.changed() => return,
                        }
                    }
                });
            }
        });
        proxy
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    fn held_count(&self, needle: &[u8]) -> usize {
        self.held.lock().unwrap().windows(needle.len()).filter(|window| *window == needle).count()
    }
}

/// Whether `sent` holds the bytes `cut_after` waits for (then it waits no more).
fn take_needle(cut_after: &Mutex<Option<Vec<u8>>>, sent: &[u8]) -> bool {
    let mut needle = cut_after.lock().unwrap();
    let found = needle.as_ref().is_some_and(|needle| sent.windows(needle.len()).any(|window| window == needle));
    if found {
        *needle = None;
    }
    found
}

/// A re-entry whose bytes never reached the server (the connection
/// dropped while a proxy held them): its resend on the new connection is
/// its outcome, and the guards that look live match the server's count.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_reentry_is_resent_and_counted_once() {
    let server = Server::shared();
    let proxy = Proxy::start(server.port()).await;
    // Settle reads: 500 ms response timeout, then a 1 s pause.
    let options = ClientOptions::default().with_retry(RetryOptions::new(3, Duration::from_secs(2)));
    let client = Client::connect(redis::Client::open(proxy.url()).unwrap(), options).await.unwrap();
    let lock = client.lock("review2:settle");
    let first = lock.lock().await.unwrap();
    let second = lock.lock().await.unwrap();

    proxy.holding.send_replace(true);
    let third = tokio::spawn({
        let lock = lock.clone();
        async move { lock.lock().await }
    });
    // The re-entry is one RLOCK.ACQUIRE with a request id; the second is
    // its resend, after the first timed out.
    eventually!("the first resend", proxy.held_count(b"RLOCK.ACQUIRE") >= 2);
    // It times out after 500 ms; the resend then sleeps 1 s. The connection
    // drops meanwhile (what it held never reaches the server) and another
    // call on the client notices and reconnects.
    tokio::time::sleep(Duration::from_millis(700)).await;
    proxy.holding.send_replace(false);
    proxy.cut.send_modify(|n| *n += 1);
    let other = client.lock("review2:other");
    let _ = other.is_locked().await;

    let third = third.await.unwrap();
    let server_count = redis::cmd("HGET")
        .arg("review2:settle")
        .arg(lock.owner())
        .query::<Option<i64>>(&mut server.connection())
        .unwrap();
    let live: Vec<bool> = [Some(&first), Some(&second), third.as_ref().ok()]
        .iter()
        .map(|guard| guard.is_some_and(|guard| !guard.is_lost()))
        .collect();
    let live_count = live.iter().filter(|live| **live).count() as i64;
    assert_eq!(
        (server_count.unwrap_or(0), first.is_lost(), second.is_lost()),
        (live_count, false, false),
        "the re-entry never reached the server, yet lock() returned {third:?}; \
         live guards {live:?}, server hold count {server_count:?}"
    );
}

/// A cluster of three primaries, each announcing a proxy in front of it,
/// and a client connected through the proxies: `(node port, its proxy)`.
async fn proxied_cluster() -> (Cluster, Vec<(u16, Proxy)>, Client) {
    let cluster = Cluster::start(3, 0);
    let mut proxies = Vec::new();
    for node in &cluster.nodes {
        let proxy = Proxy::start(node.port()).await;
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("cluster-announce-port")
            .arg(proxy.port)
            .query(&mut node.connection())
            .unwrap();
        proxies.push((node.port(), proxy));
    }
    for node in &cluster.nodes {
        eventually!("every node names the proxies", {
            let nodes: String = redis::cmd("CLUSTER").arg("NODES").query(&mut node.connection()).unwrap();
            proxies.iter().all(|(_, proxy)| nodes.contains(&format!("127.0.0.1:{}@", proxy.port)))
        });
    }
    let urls: Vec<String> = proxies.iter().map(|(_, proxy)| proxy.url()).collect();
    let options = ClientOptions::default().with_replica_sync(rlock_client::ReplicaSync::Off);
    let client = Client::connect_cluster(urls, options).await.unwrap();
    (cluster, proxies, client)
}

/// The node that owns `name`'s slot (the nodes name it by its proxy), and
/// that proxy.
fn owner_of<'a>(cluster: &'a Cluster, proxies: &'a [(u16, Proxy)], name: &str) -> (&'a Server, &'a Proxy) {
    let slot: i64 = redis::cmd("CLUSTER").arg("KEYSLOT").arg(name).query(&mut cluster.nodes[0].connection()).unwrap();
    let owner = cluster.slot_owner(slot).unwrap();
    let (node_port, proxy) = proxies.iter().find(|(_, proxy)| proxy.port == owner).unwrap();
    (cluster.node(*node_port), proxy)
}

/// A release that carries no unlock latch (in a cluster, a name with `{`
/// and no hash tag: its latch would be in another slot) is sent once, the
/// client guide says: a second run would drop another level. Its
/// connection is cut after the server ran it, before the reply came.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlatched_release_whose_connection_dropped_is_not_run_again_in_a_cluster() {
    let (cluster, proxies, client) = proxied_cluster().await;
    let name = "unlatched{release";
    let lock = client.lock(name);
    let outer = lock.lock().await.unwrap();
    let inner = lock.lock().await.unwrap();
    let (node, proxy) = owner_of(&cluster, &proxies, name);
    let before = common::stalls::calls(node, "rlock.release");
    *proxy.cut_after.lock().unwrap() = Some(b"RLOCK.RELEASE".to_vec());
    let unlocked = inner.unlock().await;
    let runs = common::stalls::calls(node, "rlock.release") - before;
    let count: Option<i64> = redis::cmd("HGET").arg(name).arg(lock.owner()).query(&mut node.connection()).unwrap();
    assert_eq!(
        (runs, count, outer.is_lost()),
        (1, Some(1), false),
        "the release ran {runs} times (unlock: {unlocked:?}); the owner's count {count:?}"
    );
}

/// A force unlock is sent once, the client guide says: a second one could
/// delete a holder who took the lock in between. Its connection is cut
/// after the server ran it, and another owner takes the lock before the
/// client can notice the cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_force_unlock_whose_connection_dropped_is_not_run_again_in_a_cluster() {
    let (cluster, proxies, client) = proxied_cluster().await;
    let name = "forced:unlock";
    let (node, proxy) = owner_of(&cluster, &proxies, name);
    let take = |owner: &str| {
        let taken: Option<i64> =
            redis::cmd("RLOCK.ACQUIRE").arg(name).arg(owner).arg(30_000).query(&mut node.connection()).unwrap();
        assert_eq!(taken, None, "{owner} takes the lock");
    };
    take("first-holder");
    let before = common::stalls::calls(node, "rlock.forcerelease");
    let mut next_holder = node.connection();
    *proxy.on_cut.lock().unwrap() = Some(Box::new(move || {
        let taken: Option<i64> =
            redis::cmd("RLOCK.ACQUIRE").arg(name).arg("next-holder").arg(30_000).query(&mut next_holder).unwrap();
        assert_eq!(taken, None, "the next holder takes the lock the force unlock freed");
    }));
    *proxy.cut_after.lock().unwrap() = Some(b"RLOCK.FORCERELEASE".to_vec());
    let forced = client.lock(name).force_unlock().await;
    let runs = common::stalls::calls(node, "rlock.forcerelease") - before;
    let holder: Option<i64> = redis::cmd("HGET").arg(name).arg("next-holder").query(&mut node.connection()).unwrap();
    assert_eq!(
        (runs, holder),
        (1, Some(1)),
        "the force unlock ran {runs} times (force_unlock: {forced:?}); the next holder's count {holder:?}"
    );
}

/// A proxy that closes the client's own connection to a node while it sits
/// idle (as a proxy's idle timeout does) costs the next unlatched release
/// nothing: it was never sent, and goes once on a new connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlatched_release_after_a_proxy_closed_its_idle_connection_goes_on_a_new_one() {
    let (cluster, proxies, client) = proxied_cluster().await;
    let name = "proxied{idle";
    let lock = client.lock(name);
    let outer = lock.lock().await.unwrap();
    lock.lock().await.unwrap().unlock().await.unwrap();
    let (node, proxy) = owner_of(&cluster, &proxies, name);
    let idle = connection_that_ran(node, "rlock.release");
    eventually!("the connection sits idle", Duration::from_secs(5), idle_over_a_second(node, &idle));
    proxy.cut.send_modify(|n| *n += 1);
    let released = outer.unlock().await;
    let exists: bool = redis::cmd("EXISTS").arg(name).query(&mut node.connection()).unwrap();
    assert!(released.is_ok() && !exists, "the release after the cut: {released:?}, the lock still there: {exists}");
}

/// A client on one server through `proxy`, with a watchdog too slow to
/// notice anything these tests do to a hold before its unlock.
async fn proxied_client(proxy: &Proxy) -> Client {
    let options = ClientOptions::default()
        .with_watchdog_timeout(Duration::from_secs(30))
        .with_replica_sync(rlock_client::ReplicaSync::Off);
    Client::connect(redis::Client::open(proxy.url()).unwrap(), options).await.unwrap()
}

/// A fair lock and both sides of a read-write lock named after `name`,
/// each with the release command it sends and the field of the lock's
/// hash that counts the handle's holds.
fn latched_kinds(client: &Client, name: &str) -> [(rlock_client::Lock, &'static str, Vec<u8>); 3] {
    let fair = client.fair_lock(format!("{name}:fair"));
    let rw = client.read_write_lock(format!("{name}:rw"));
    let (read, write) = (rw.read(), rw.write());
    let write_field = rlock_protocol::rwlock_write_field(write.owner());
    let (fair_field, read_field) = (fair.owner().to_vec(), read.owner().to_vec());
    [(fair, "RFAIR.RELEASE", fair_field), (read, "RRW.RELEASE", read_field), (write, "RRW.RELEASE", write_field)]
}

/// A fair or read-write release whose reply is lost (the proxy cuts the
/// connection once the server ran it) is sent again under its request id:
/// the re-entry's release leaves the outer level, the outer's frees the
/// lock, each answered Ok, and the server shows exactly that.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fair_or_read_write_release_whose_reply_was_lost_is_applied_once() {
    let server = Server::shared();
    let proxy = Proxy::start(server.port()).await;
    let client = proxied_client(&proxy).await;
    for (lock, release, field) in latched_kinds(&client, "lost-release-reply") {
        let (kind, name) = (lock.kind(), String::from_utf8(lock.name().to_vec()).unwrap());
        let count = || {
            let count: Option<i64> = redis::cmd("HGET").arg(&name).arg(&field).query(&mut server.connection()).unwrap();
            count
        };
        let releases = || common::stalls::calls(&server, &release.to_lowercase());
        let outer = lock.lock().await.unwrap();
        let inner = lock.lock().await.unwrap();
        let before = releases();
        *proxy.cut_after.lock().unwrap() = Some(release.as_bytes().to_vec());
        let unlocked = inner.unlock().await;
        assert_eq!(
            (unlocked.is_ok(), count(), outer.is_lost(), releases() - before),
            (true, Some(1), false, 2),
            "{kind:?}: the inner unlock ({unlocked:?}), the owner's count, the outer guard lost, releases run"
        );
        *proxy.cut_after.lock().unwrap() = Some(release.as_bytes().to_vec());
        let unlocked = outer.unlock().await;
        let exists: bool = redis::cmd("EXISTS").arg(&name).query(&mut server.connection()).unwrap();
        assert!(unlocked.is_ok() && !exists, "{kind:?}: the outer unlock {unlocked:?}, the lock left: {exists}");
    }
}

/// A fair or read-write hold that ended on the server unseen (its key
/// deleted, the watchdog not yet round) is not released by its unlock,
/// which says so, `NotOwner`: also when the release's reply is lost and
/// its resend would find a latch the first one left. A fair release of a
/// missing lock answered "released" (Redisson's script does), and a
/// read-write one recorded "released" in its latch while it answered
/// "not held", which the resend then replayed: both `Ok`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlock_of_a_fair_or_read_write_hold_already_gone_reports_not_owner() {
    let server = Server::shared();
    let proxy = Proxy::start(server.port()).await;
    let client = proxied_client(&proxy).await;
    for cut in [false, true] {
        for (lock, release, _) in latched_kinds(&client, &format!("gone-before-unlock:{cut}")) {
            let (kind, name) = (lock.kind(), String::from_utf8(lock.name().to_vec()).unwrap());
            let guard = lock.lock().await.unwrap();
            let _: i64 = redis::cmd("DEL").arg(&name).query(&mut server.connection()).unwrap();
            if cut {
                *proxy.cut_after.lock().unwrap() = Some(release.as_bytes().to_vec());
            }
            let unlocked = guard.unlock().await;
            assert!(
                matches!(unlocked, Err(rlock_client::Error::NotOwner)),
                "{kind:?}, reply lost: {cut}: the unlock of a hold already gone answered {unlocked:?}"
            );
            assert!(!proxy.cut_after.lock().unwrap().is_some(), "{kind:?}: the release went through the proxy");
        }
    }
}
