//! Fair waiters through rlock-client while the holder's watchdog renews:
//! a hostile review of issue 20 found an early release after a renewal
//! purging live pub/sub waiters.

mod common;

use common::patient;
use redis::aio::MultiplexedConnection;
use rlock_client::{Client, ClientOptions};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use testkit::{eventually, Server, PATIENCE};
use tokio::time::Instant;

/// The fair wait of the head and the second waiter: a waiter must ask
/// again within it (and take its turn within it) or lose its place.
const SHORT_WAIT: Duration = Duration::from_millis(300);
const OWNERS: [&str; 3] = ["head", "second", "third"];
/// Sweeps of release times tried before the machine counts as too loaded.
const SWEEPS: usize = 3;

async fn connection(server: &Server) -> MultiplexedConnection {
    server.client().get_multiplexed_async_connection_with_config(&patient()).await.unwrap()
}

async fn position(con: &mut MultiplexedConnection, name: &str, owner: &str) -> i64 {
    let reply: Vec<(String, Option<i64>)> =
        redis::cmd("RFAIR.STATUS").arg(name).arg(owner).query_async(con).await.unwrap();
    reply.iter().find(|(field, _)| field == "position").and_then(|(_, value)| *value).unwrap()
}

/// The queue as the server shows it in one transaction: the owners by
/// place (`None` when one is not queued) and the least time, in ms, any of
/// them has left to ask again before the server drops it.
async fn queue(con: &mut MultiplexedConnection, name: &str) -> (Option<Vec<&'static str>>, i64) {
    let mut pipe = redis::pipe();
    pipe.atomic().cmd("TIME");
    for owner in OWNERS {
        pipe.cmd("RFAIR.STATUS").arg(name).arg(owner);
        pipe.cmd("ZSCORE").arg(rlock_protocol::fair_timeout_key(name.as_bytes())).arg(owner);
    }
    let replies: Vec<redis::Value> = pipe.query_async(con).await.unwrap();
    let (secs, micros): (i64, i64) = redis::from_redis_value(replies[0].clone()).unwrap();
    let now_ms = secs * 1000 + micros / 1000;
    let mut places = Vec::new();
    let mut least_left = i64::MAX;
    for (owner, pair) in OWNERS.iter().zip(replies[1..].chunks(2)) {
        let status: Vec<(String, Option<i64>)> = redis::from_redis_value(pair[0].clone()).unwrap();
        let place = status.iter().find(|(field, _)| field == "position").and_then(|(_, value)| *value).unwrap();
        let deadline: Option<i64> = redis::from_redis_value(pair[1].clone()).unwrap();
        places.push((place, *owner));
        least_left = least_left.min(deadline.map_or(0, |deadline| deadline - now_ms));
    }
    places.sort();
    let queued = places.iter().all(|(place, _)| *place > 0);
    (queued.then(|| places.into_iter().map(|(_, owner)| owner).collect()), least_left)
}

/// One lock's run: the order the server showed at the release, and the
/// grants as `(owner, granted at, releasing at)`, in order.
struct Run {
    offset: u64,
    queued: Vec<&'static str>,
    releasing: Instant,
    grants: Vec<(&'static str, Instant, Instant)>,
}

impl Run {
    /// Whether the grants follow the queue the server showed at the
    /// release. A short waiter whose turn ran out before it took the lock
    /// (a loaded machine) rightly loses its place and queues again last:
    /// only a grant to another once that turn is over excuses it.
    fn kept_order(&self) -> bool {
        let mut queue = self.queued.clone();
        let mut turn_began = self.releasing;
        for &(owner, granted, releasing) in &self.grants {
            while queue[0] != owner {
                let short = queue[0] != "third";
                if !short || granted < turn_began + SHORT_WAIT || !queue.contains(&owner) {
                    return false;
                }
                queue.rotate_left(1);
            }
            queue.remove(0);
            turn_began = releasing;
        }
        true
    }
}

/// Pub/sub waiting (as every waiter beyond the blocking pool's size does):
/// the holder's watchdog renews its lease while it works; the head polls
/// at its hint and its deadline jumps past the renewed lease; the holder
/// finishes a moment later, and the release's deadline shift purges the
/// live waiters behind the head (their deadlines still chained to the
/// head's old one). The waiter with the longer fair wait survives, so it
/// overtakes the one that asked first. A waiter slower than its fair wait
/// to ask again while the lock is held (a loaded machine: its timer fires
/// late) is dropped before the release, rightly: such a run shows nothing
/// of the release, and is not counted; the grants must still follow the
/// queue the server showed at the release.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watchdog_renewals_then_an_early_release_break_arrival_order_of_pubsub_waiters() {
    let server = Arc::new(Server::start());
    let options = |wait_ms: u64| {
        ClientOptions::default()
            .with_watchdog_timeout(Duration::from_millis(3_000))
            .with_fair_wait_timeout(Duration::from_millis(wait_ms))
            .with_blocking_connections(0)
    };
    let short = Client::connect(server.client(), options(SHORT_WAIT.as_millis() as u64)).await.unwrap();
    let long = Client::connect(server.client(), options(5_000)).await.unwrap();
    let mut intact = Vec::new();
    for sweep in 0..SWEEPS {
        for run in release_sweep(&server, &short, &long, sweep).await {
            let Run { offset, queued, grants, .. } = &run;
            let owners: Vec<&str> = grants.iter().map(|(owner, _, _)| *owner).collect();
            assert!(
                run.kept_order(),
                "release after {offset} ms: queued {queued:?} at the release, granted {owners:?}"
            );
            if *queued == OWNERS {
                intact.push(*offset);
            }
        }
        if !intact.is_empty() {
            return;
        }
    }
    panic!("in {SWEEPS} sweeps no waiter kept its place until the release: the machine is too loaded for this test");
}

/// One lock per release time, all at once. The head's hint is the lease's
/// PTTL (3 s): it polls then, after the watchdog renewed the lease; the
/// holder finishes around then. Runs whose queue was not the waiters'
/// arrival order at the release, or may have lost a waiter by then, are
/// left out.
async fn release_sweep(server: &Arc<Server>, short: &Client, long: &Client, sweep: usize) -> Vec<Run> {
    let mut runs = Vec::new();
    for offset in (2_900..3_400).step_by(25) {
        let (server, short, long) = (server.clone(), short.clone(), long.clone());
        runs.push(tokio::spawn(async move {
            let name = format!("w{sweep}-{offset}");
            let mut con = connection(&server).await;
            let holder = short.fair_lock(&name).lock().await.unwrap();
            let grants = Arc::new(Mutex::new(Vec::new()));
            let mut tasks = Vec::new();
            for (owner, client) in OWNERS.into_iter().zip([&short, &short, &long]) {
                let lock = client.owned_by(owner).fair_lock(&name);
                let grants = grants.clone();
                tasks.push(tokio::spawn(async move {
                    let guard = lock.lock().await.unwrap();
                    let granted = Instant::now();
                    grants.lock().unwrap().push((owner, granted, Instant::now()));
                    guard.unlock().await.unwrap();
                }));
                eventually!(format!("{owner} queued"), position(&mut con, &name, owner).await > 0);
            }
            // The release time is the variable under test (around the head's 3 s hint), not a wait.
            tokio::time::sleep(Duration::from_millis(offset)).await;
            let looked = Instant::now();
            let (queued, least_left_ms) = queue(&mut con, &name).await;
            let releasing = Instant::now();
            holder.unlock().await.unwrap();
            // Every waiter was still queued when the release ran.
            let alive = least_left_ms > looked.elapsed().as_millis() as i64;
            for task in tasks {
                tokio::time::timeout(PATIENCE, task).await.expect("granted").unwrap();
            }
            let grants = grants.lock().unwrap().clone();
            queued.filter(|_| alive).map(|queued| Run { offset, queued, releasing, grants })
        }));
    }
    let mut done = Vec::new();
    for run in runs {
        done.extend(run.await.unwrap());
    }
    done
}
