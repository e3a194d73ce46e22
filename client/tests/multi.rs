//! MultiLock (all of several locks) and RedLock (a majority of five
//! independent primaries): what each grants, what it gives back, and when
//! its guard reports the locks lost.

mod common;

use common::admin;
use rlock_client::{Client, ClientOptions, MultiLock, RedLock, ReplicaSync};
use std::time::Duration;
use testkit::{Server, PATIENCE};

fn options() -> ClientOptions {
    ClientOptions::default().with_watchdog_timeout(Duration::from_millis(900)).with_replica_sync(ReplicaSync::Off)
}

async fn client(server: &Server) -> Client {
    Client::connect(server.client(), options()).await.expect("client")
}

async fn exists(server: &Server, key: &str) -> bool {
    redis::cmd("EXISTS").arg(key).query_async::<i64>(&mut admin(server).await).await.unwrap() == 1
}

fn multi(client: &Client, names: &[&str]) -> MultiLock {
    MultiLock::new(names.iter().map(|name| client.lock(name)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_lock_holds_all_or_nothing_and_is_lost_with_any() {
    let server = Server::shared();
    let (first, second) = (client(&server).await, client(&server).await);
    let held = multi(&first, &["a", "b", "c"]).lock().await.unwrap();
    assert_eq!(held.guards().len(), 3);
    // "d" is free, "c" is not: nothing is left held.
    let refused = multi(&second, &["d", "c"]).try_lock(Duration::from_millis(200), None).await.unwrap();
    assert!(refused.is_none());
    assert!(!exists(&server, "d").await, "the lock taken on the way was given back");
    let waiting = {
        let lock = multi(&second, &["c", "d"]);
        tokio::spawn(async move { lock.lock().await })
    };
    held.unlock().await.unwrap();
    let taken = tokio::time::timeout(PATIENCE, waiting).await.expect("granted after the unlock").unwrap().unwrap();
    let _: i64 = redis::cmd("DEL").arg("d").query_async(&mut admin(&server).await).await.unwrap();
    tokio::time::timeout(PATIENCE, taken.lost()).await.expect("lost with one of its locks");
}

/// Two multi-locks over the same locks named in opposite orders take them
/// in one order: they never deadlock, each gets its turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_locks_over_one_set_in_opposite_orders_do_not_deadlock() {
    let server = Server::shared();
    let (first, second) = (client(&server).await, client(&server).await);
    let rounds = |client: Client, names: [&'static str; 3]| {
        tokio::spawn(async move {
            for _ in 0..20 {
                let guard = multi(&client, &names).lock().await.unwrap();
                guard.unlock().await.unwrap();
            }
        })
    };
    let one = rounds(first, ["x", "y", "z"]);
    let other = rounds(second, ["z", "y", "x"]);
    tokio::time::timeout(PATIENCE * 3, async { (one.await.unwrap(), other.await.unwrap()) })
        .await
        .expect("no deadlock");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redlock_needs_a_majority_and_is_lost_without_one() {
    let mut servers: Vec<Server> = (0..5).map(|_| Server::start()).collect();
    let mut clients = Vec::new();
    for server in &servers {
        clients.push(client(server).await);
    }
    let redlock = |clients: &[Client]| RedLock::new(clients.iter().map(|client| client.lock("r")));
    // Two primaries down: three of five still grant it.
    servers[3].kill();
    servers[4].kill();
    let lease = Duration::from_secs(30);
    let guard = redlock(&clients).try_lock(Duration::ZERO, Some(lease)).await.unwrap().expect("a majority");
    assert_eq!(guard.guards().len(), 3);
    assert!(guard.valid_until() > std::time::Instant::now() + lease - Duration::from_secs(2));
    // Another owner gets no majority, and keeps nothing.
    let others: Vec<Client> = {
        let mut others = Vec::new();
        for server in &servers[..3] {
            others.push(client(server).await);
        }
        others
    };
    let other = RedLock::new(others.iter().map(|client| client.lock("r")));
    assert!(other.try_lock(Duration::from_millis(300), Some(lease)).await.unwrap().is_none());
    // A hold lost meanwhile is reported, and does not keep the others from being released.
    let _: i64 = redis::cmd("DEL").arg("r").query_async(&mut admin(&servers[0]).await).await.unwrap();
    assert!(matches!(guard.unlock().await, Err(rlock_client::Error::NotOwner)));
    for server in &servers[..3] {
        assert!(!exists(server, "r").await, "released everywhere");
    }
    // A watchdog redlock is lost once its holds left are no majority.
    let watched = redlock(&clients[..3]).try_lock(Duration::ZERO, None).await.unwrap().expect("a majority of three");
    let _: i64 = redis::cmd("DEL").arg("r").query_async(&mut admin(&servers[0]).await).await.unwrap();
    assert!(tokio::time::timeout(Duration::from_secs(1), watched.lost()).await.is_err(), "two of three still held");
    let _: i64 = redis::cmd("DEL").arg("r").query_async(&mut admin(&servers[1]).await).await.unwrap();
    tokio::time::timeout(PATIENCE, watched.lost()).await.expect("lost without a majority");
    // Three primaries down: no majority of five.
    servers[2].kill();
    assert!(redlock(&clients).try_lock(Duration::from_millis(300), Some(lease)).await.unwrap().is_none());
}

/// One name on two servers, named in opposite orders by two processes
/// (other clients, other random owner ids): taken in one order all the
/// same, so each gets its turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_name_on_two_servers_is_taken_in_one_order_by_every_process() {
    let servers = [Server::start(), Server::start()];
    let rounds = |clients: [Client; 2]| {
        tokio::spawn(async move {
            for _ in 0..10 {
                let multi = MultiLock::new(clients.iter().map(|client| client.lock("same")));
                let guard = multi.try_lock(PATIENCE, None).await.unwrap().expect("its turn");
                guard.unlock().await.unwrap();
            }
        })
    };
    let one = rounds([client(&servers[0]).await, client(&servers[1]).await]);
    let other = rounds([client(&servers[1]).await, client(&servers[0]).await]);
    tokio::time::timeout(PATIENCE * 3, async { (one.await.unwrap(), other.await.unwrap()) })
        .await
        .expect("no livelock");
}

/// A fixed lease counts from the first lock's acquire: an attempt that
/// waited past it for the last lock does not return holds already gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixed_lease_that_runs_out_while_the_last_lock_is_awaited_is_not_returned() {
    let server = Server::shared();
    let (first, second) = (client(&server).await, client(&server).await);
    let busy = second.lock("b").lock_with_lease(Duration::from_millis(1_500)).await.unwrap();
    let lease = Duration::from_millis(500);
    let guard = multi(&first, &["a", "b"]).try_lock(Duration::from_secs(5), Some(lease)).await.unwrap();
    let guard = guard.expect("held once b was free");
    assert!(guard.guards().iter().all(|guard| !guard.is_lost()), "every hold is alive");
    assert!(exists(&server, "a").await && exists(&server, "b").await);
    drop(busy);
    guard.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redlock_reports_what_no_primary_can_grant_and_takes_any_wait() {
    let servers: Vec<Server> = (0..3).map(|_| Server::builder().without_module().start()).collect();
    let mut clients = Vec::new();
    for server in &servers {
        clients.push(client(server).await);
    }
    let redlock = RedLock::new(clients.iter().map(|client| client.lock("r")));
    let refused = redlock.try_lock(Duration::from_secs(1), Some(Duration::from_secs(30))).await;
    assert!(matches!(refused, Err(rlock_client::Error::ModuleNotLoaded)), "{refused:?}");
    let with_module = Server::shared();
    let one = client(&with_module).await;
    let redlock = RedLock::new([one.lock("r")]);
    let guard = redlock.try_lock(Duration::MAX, None).await.unwrap().expect("granted");
    guard.unlock().await.unwrap();
    let multi = multi(&one, &["m"]);
    multi.try_lock(Duration::MAX, None).await.unwrap().expect("granted").unlock().await.unwrap();
}
