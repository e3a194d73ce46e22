//! Fair waiters through rlock-client while the holder's watchdog renews:
//! a hostile review of issue 20 found an early release after a renewal
//! purging live pub/sub waiters.

mod common;

use common::admin;
use rlock_client::{Client, ClientOptions};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use testkit::{eventually, Server, PATIENCE};
use tokio::time::Instant;

/// The fair wait of the head and the second waiter: at the release the
/// head's turn lasts this long (it must take the lock by then).
const SHORT_WAIT: Duration = Duration::from_millis(300);

async fn position(server: &Server, name: &str, owner: &[u8]) -> i64 {
    let reply: Vec<(String, Option<i64>)> =
        redis::cmd("RFAIR.STATUS").arg(name).arg(owner).query_async(&mut admin(server).await).await.unwrap();
    reply.iter().find(|(field, _)| field == "position").and_then(|(_, value)| *value).unwrap()
}

/// Pub/sub waiting (as every waiter beyond the blocking pool's size does):
/// the holder's watchdog renews its lease while it works; the head polls
/// at its hint and its deadline jumps past the renewed lease; the holder
/// finishes a moment later, and the release's deadline shift purges the
/// live waiters behind the head (their deadlines still chained to the
/// head's old one). The waiter with the longer fair wait survives, so it
/// overtakes the one that asked first. A head slower than its turn to
/// answer the release (a loaded machine) rightly loses its place to the
/// second waiter, which then takes the lock only once that turn is over.
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
    // The head's hint is the lease's PTTL (3 s); it polls then, after the
    // watchdog renewed the lease; the holder finishes just after. One lock
    // per release time, all at once.
    let mut runs = Vec::new();
    for offset in (2_900..3_400).step_by(25) {
        let (server, short, long) = (server.clone(), short.clone(), long.clone());
        runs.push(tokio::spawn(async move {
            let name = format!("w{offset}");
            let holder = short.fair_lock(&name).lock().await.unwrap();
            let order = Arc::new(Mutex::new(Vec::new()));
            let mut tasks = Vec::new();
            for (owner, client) in [("head", &short), ("second", &short), ("third", &long)] {
                let lock = client.fair_lock_with_owner(&name, owner);
                let order = order.clone();
                tasks.push(tokio::spawn(async move {
                    let guard = lock.lock().await.unwrap();
                    order.lock().unwrap().push((owner, Instant::now()));
                    guard.unlock().await.unwrap();
                }));
                eventually!(format!("{owner} queued"), position(&server, &name, owner.as_bytes()).await > 0);
            }
            // The release time is the variable under test (around the head's 3 s hint), not a wait.
            tokio::time::sleep(Duration::from_millis(offset)).await;
            let releasing = Instant::now();
            holder.unlock().await.unwrap();
            for task in tasks {
                tokio::time::timeout(PATIENCE, task).await.expect("granted").unwrap();
            }
            let order = order.lock().unwrap().clone();
            let (owners, granted): (Vec<_>, Vec<_>) = order.into_iter().unzip();
            let head_turn_ran_out = granted[0] >= releasing + SHORT_WAIT;
            (offset, owners, head_turn_ran_out)
        }));
    }
    let mut broken = Vec::new();
    for run in runs {
        let (offset, order, head_turn_ran_out) = run.await.unwrap();
        let head_too_slow = head_turn_ran_out && order == ["second", "third", "head"];
        if order != ["head", "second", "third"] && !head_too_slow {
            broken.push((offset, order));
        }
    }
    assert!(broken.is_empty(), "arrival order broken (release after ms, grant order): {broken:?}");
}
