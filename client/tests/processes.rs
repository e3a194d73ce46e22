//! Locks across OS processes. The workers are this test binary, started
//! again with `RLOCK_WORKER` set, running only the `worker` test.

use redis::AsyncCommands;
use rlock_client::{Client, ClientOptions};
use std::time::{Duration, Instant};
use testkit::{eventually, Server};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};

mod common;

const PROCESSES: usize = 2;
const TASKS: usize = 8;
const UPDATES_PER_TASK: usize = 150;
const HOLDER_WATCHDOG: Duration = Duration::from_millis(1500);
/// What the holder prints once it holds the lock. libtest may print on the
/// same line first, so it is matched anywhere in a line.
const LOCKED_MARKER: &str = "rlock-holder-locked";
const LOST_MARKER: &str = "rlock-holder-lost";
const UNLOCK_MARKER: &str = "rlock-holder-unlock:";
/// The fair lock wait of the killed waiter.
const FAIR_WAIT: Duration = Duration::from_millis(500);

/// A worker in `role` that holds its lock, with its output lines.
async fn start_holder(role: &str, server: &Server) -> (Child, Lines<BufReader<ChildStdout>>) {
    let mut holder = common::start_worker(role, &server.url());
    let mut lines = BufReader::new(holder.stdout.take().expect("piped stdout")).lines();
    wait_for_line(&mut lines, LOCKED_MARKER).await;
    (holder, lines)
}

/// Worker entry point; a no-op in the normal test run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker() {
    let (Ok(role), Ok(url)) = (std::env::var("RLOCK_WORKER"), std::env::var("RLOCK_URL")) else {
        return;
    };
    match role.as_str() {
        "counter" => count_under_the_lock(&url, ClientOptions::default().with_blocking_connections(0)).await,
        "blocking-counter" => {
            count_under_the_lock(&url, ClientOptions::default().with_blocking_connections(TASKS)).await
        }
        "holder" => hold_until_killed(&url).await,
        "paused-holder" => hold_and_report_loss(&url).await,
        "rw-counter" => read_and_write_under_the_lock(&url).await,
        "fair-waiter" => wait_in_the_fair_queue(&url).await,
        other => panic!("unknown worker role {other}"),
    }
}

/// TASKS tasks, each doing UPDATES_PER_TASK non-atomic GET-then-SET
/// increments of one counter under the lock.
async fn count_under_the_lock(url: &str, options: ClientOptions) {
    let client = Client::connect(redis::Client::open(url).unwrap(), options).await.unwrap();
    let redis = redis::Client::open(url).unwrap();
    let tasks: Vec<_> = (0..TASKS)
        .map(|_| {
            let lock = client.lock("counter-lock");
            let redis = redis.clone();
            tokio::spawn(async move {
                let mut con = redis.get_multiplexed_async_connection_with_config(&common::patient()).await.unwrap();
                for _ in 0..UPDATES_PER_TASK {
                    let guard = lock.lock().await.unwrap();
                    let inside: i64 = con.incr("inside", 1).await.unwrap();
                    assert_eq!(inside, 1, "two holders at once");
                    let counter: i64 = con.get::<_, Option<i64>>("counter").await.unwrap().unwrap_or(0);
                    tokio::task::yield_now().await;
                    let _: () = con.set("counter", counter + 1).await.unwrap();
                    let _: i64 = con.decr("inside", 1).await.unwrap();
                    guard.unlock().await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
}

/// TASKS tasks: half write (GET-then-SET increments under the write lock),
/// half read (under the read lock, no writer may be inside; readers may).
async fn read_and_write_under_the_lock(url: &str) {
    let client = Client::open(url).await.unwrap();
    let redis = redis::Client::open(url).unwrap();
    let tasks: Vec<_> = (0..TASKS)
        .map(|n| {
            let lock = client.read_write_lock("rw-lock");
            let redis = redis.clone();
            tokio::spawn(async move {
                let mut con = redis.get_multiplexed_async_connection_with_config(&common::patient()).await.unwrap();
                for _ in 0..UPDATES_PER_TASK / 3 {
                    if n % 2 == 0 {
                        let guard = lock.write().lock().await.unwrap();
                        let inside: i64 = con.incr("writers", 1).await.unwrap();
                        let readers: i64 = con.get::<_, Option<i64>>("readers").await.unwrap().unwrap_or(0);
                        assert_eq!((inside, readers), (1, 0), "a writer shared the lock");
                        let counter: i64 = con.get::<_, Option<i64>>("rw-counter").await.unwrap().unwrap_or(0);
                        tokio::task::yield_now().await;
                        let _: () = con.set("rw-counter", counter + 1).await.unwrap();
                        let _: i64 = con.decr("writers", 1).await.unwrap();
                        guard.unlock().await.unwrap();
                    } else {
                        let guard = lock.read().lock().await.unwrap();
                        let readers: i64 = con.incr("readers", 1).await.unwrap();
                        if readers > 1 {
                            let _: () = con.set("readers-shared", 1).await.unwrap();
                        }
                        let writers: i64 = con.get::<_, Option<i64>>("writers").await.unwrap().unwrap_or(0);
                        assert_eq!(writers, 0, "a reader met a writer");
                        // Stays inside a while, so that an overlap would show: not a wait.
                        tokio::time::sleep(Duration::from_millis(1)).await;
                        let _: i64 = con.decr("readers", 1).await.unwrap();
                        guard.unlock().await.unwrap();
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
}

/// Joins the fair lock's queue and waits there until killed.
async fn wait_in_the_fair_queue(url: &str) {
    let options = ClientOptions::default().with_fair_wait_timeout(FAIR_WAIT);
    let client = Client::connect(redis::Client::open(url).unwrap(), options).await.unwrap();
    let _guard = client.fair_lock("fair-line").lock().await.unwrap();
    std::future::pending::<()>().await;
}

async fn hold_until_killed(url: &str) {
    let options = ClientOptions::default().with_watchdog_timeout(HOLDER_WATCHDOG);
    let client = Client::connect(redis::Client::open(url).unwrap(), options).await.unwrap();
    let _guard = client.lock("killed-holder").lock().await.unwrap();
    println!("{LOCKED_MARKER}");
    std::future::pending::<()>().await;
}

/// Holds a lock, then says when it learns the lock is lost and what its
/// unlock reported.
async fn hold_and_report_loss(url: &str) {
    let options = ClientOptions::default().with_watchdog_timeout(HOLDER_WATCHDOG);
    let client = Client::connect(redis::Client::open(url).unwrap(), options).await.unwrap();
    let guard = client.lock("paused-holder").lock().await.unwrap();
    println!("{LOCKED_MARKER}");
    guard.lost().await;
    println!("\n{LOST_MARKER}");
    let unlocked = guard.unlock().await;
    println!(
        "\n{UNLOCK_MARKER}{}",
        if matches!(unlocked, Err(rlock_client::Error::NotOwner)) { "NotOwner" } else { "other" }
    );
}

/// Waits for a line of the worker's output that contains `marker`.
async fn wait_for_line(lines: &mut Lines<BufReader<ChildStdout>>, marker: &str) -> String {
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            match lines.next_line().await.unwrap() {
                Some(line) if line.contains(marker) => return line,
                Some(_) => continue,
                None => panic!("the worker exited before printing {marker}"),
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the worker did not print {marker}"))
}

/// Waiters wait by pub/sub here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_exclusion_across_processes_loses_no_update() {
    count_across_processes("counter").await;
}

/// The same with the blocking waiting mode: waiters of both processes
/// queue on the server, which grants the lock.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocking_waiters_across_processes_lose_no_update() {
    let granted = count_across_processes("blocking-counter").await;
    assert!(granted > 0, "no acquire was granted by the server");
}

/// Runs PROCESSES workers in `role` and checks the counter; returns the
/// server's count of locks granted to blocked waiters.
async fn count_across_processes(role: &str) -> i64 {
    let server = Server::start();
    let mut workers: Vec<Child> = (0..PROCESSES).map(|_| common::start_worker(role, &server.url())).collect();
    for worker in &mut workers {
        let status =
            tokio::time::timeout(Duration::from_secs(120), worker.wait()).await.expect("worker finished").unwrap();
        assert!(status.success(), "a worker failed: {status}");
    }
    let mut con = server.client().get_multiplexed_async_connection_with_config(&common::patient()).await.unwrap();
    let counter: i64 = con.get("counter").await.unwrap();
    assert_eq!(counter, (PROCESSES * TASKS * UPDATES_PER_TASK) as i64, "updates were lost");
    let info: String = redis::cmd("INFO").arg("rlock").query_async(&mut con).await.unwrap();
    info.lines().find_map(|line| line.strip_prefix("rlock_granted:")).map_or(0, |v| v.trim().parse().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_holders_lock_is_free_after_its_lease_not_before() {
    let server = Server::start();
    let (mut holder, _lines) = start_holder("holder", &server).await;
    // Crash only after the holder's watchdog renewed once: the absolute
    // expiry moves forward.
    let mut con = server.client().get_multiplexed_async_connection_with_config(&common::patient()).await.unwrap();
    let mut expire_time = redis::cmd("PEXPIRETIME");
    expire_time.arg("killed-holder");
    let first: i64 = expire_time.query_async(&mut con).await.unwrap();
    eventually!(
        "the holder's watchdog to renew",
        Duration::from_secs(30),
        expire_time.query_async::<i64>(&mut con).await.unwrap() > first
    );

    holder.start_kill().unwrap();
    holder.wait().await.unwrap();
    let left_ms: i64 = con.pttl("killed-holder").await.unwrap();
    let measured_from = Instant::now();
    assert!(left_ms > 0, "still held right after the kill (PTTL {left_ms})");

    let client = Client::open(&server.url()).await.unwrap();
    let lock = client.lock("killed-holder");
    assert!(lock.try_lock(Duration::ZERO, None).await.unwrap().is_none(), "taken before the lease ended");
    let guard = tokio::time::timeout(Duration::from_secs(30), lock.lock()).await.expect("acquired").unwrap();
    let waited = measured_from.elapsed();
    assert!(
        waited + Duration::from_millis(2) >= Duration::from_millis(left_ms as u64),
        "acquired after {waited:?}, lease had {left_ms} ms"
    );
    assert!(
        waited < Duration::from_millis(left_ms as u64) + Duration::from_secs(5),
        "waited {waited:?} for a {left_ms} ms lease"
    );
    guard.unlock().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_paused_beyond_its_lease_loses_the_lock_and_learns_it() {
    let server = Server::start();
    let (mut holder, mut lines) = start_holder("paused-holder", &server).await;
    let pid = holder.id().expect("running");
    let signal = |signal: &str| testkit::send_signal(pid, signal);

    signal("-STOP");
    let client = Client::open(&server.url()).await.unwrap();
    let lock = client.lock("paused-holder");
    let guard =
        tokio::time::timeout(Duration::from_secs(30), lock.lock()).await.expect("acquired once the lease ran out");
    let guard = guard.unwrap();
    signal("-CONT");

    wait_for_line(&mut lines, LOST_MARKER).await;
    let unlock = wait_for_line(&mut lines, UNLOCK_MARKER).await;
    assert!(unlock.ends_with("NotOwner"), "the paused holder's unlock: {unlock}");
    assert!(lock.is_held().await.unwrap(), "the new holder keeps the lock");
    guard.unlock().await.unwrap();
    holder.wait().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_share_and_writers_exclude_across_processes() {
    let server = Server::start();
    let mut workers: Vec<Child> = (0..PROCESSES).map(|_| common::start_worker("rw-counter", &server.url())).collect();
    for worker in &mut workers {
        let status =
            tokio::time::timeout(Duration::from_secs(120), worker.wait()).await.expect("worker finished").unwrap();
        assert!(status.success(), "a worker failed: {status}");
    }
    let mut con = server.client().get_multiplexed_async_connection_with_config(&common::patient()).await.unwrap();
    let counter: i64 = con.get("rw-counter").await.unwrap();
    assert_eq!(counter, (PROCESSES * TASKS / 2 * (UPDATES_PER_TASK / 3)) as i64, "writes were lost");
    let shared: Option<i64> = con.get("readers-shared").await.unwrap();
    assert_eq!(shared, Some(1), "readers never shared the lock");
}

/// Waiters in the fair lock's queue, from RFAIR.STATUS.
async fn queued(con: &mut redis::aio::MultiplexedConnection) -> i64 {
    let status: Vec<redis::Value> = redis::cmd("RFAIR.STATUS").arg("fair-line").query_async(con).await.unwrap();
    redis::from_redis_value(status[11].clone()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_head_waiter_delays_the_next_by_at_most_its_wait() {
    let server = Server::start();
    let mut con = server.client().get_multiplexed_async_connection_with_config(&common::patient()).await.unwrap();
    let options = ClientOptions::default().with_fair_wait_timeout(FAIR_WAIT);
    let client = Client::connect(server.client(), options).await.unwrap();
    let holder = client.fair_lock("fair-line").lock().await.unwrap();
    let mut waiter = common::start_worker("fair-waiter", &server.url());
    eventually!("the worker to queue", Duration::from_secs(30), queued(&mut con).await >= 1);
    let next = client.fair_lock("fair-line");
    let next_waiting = tokio::spawn(async move { next.lock().await });
    eventually!("the second waiter to queue", queued(&mut con).await >= 2);
    waiter.start_kill().unwrap();
    waiter.wait().await.unwrap();
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query_async(&mut con).await.unwrap();
    let released_at = Instant::now();
    holder.unlock().await.unwrap();
    let guard = tokio::time::timeout(Duration::from_secs(10), next_waiting).await.unwrap().unwrap().unwrap();
    let waited = released_at.elapsed();
    assert!(
        waited <= FAIR_WAIT + Duration::from_millis(250),
        "waited {waited:?} behind a dead waiter ({FAIR_WAIT:?} wait)"
    );
    let stats: String = redis::cmd("INFO").arg("commandstats").query_async(&mut con).await.unwrap();
    let acquires: u64 = stats
        .lines()
        .find_map(|line| line.strip_prefix("cmdstat_rfair.acquire:calls="))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(acquires <= 4, "{acquires} acquire calls while the dead waiter blocked the line: it must not spin");
    guard.unlock().await.unwrap();
}
