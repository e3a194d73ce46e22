//! Section 3: contended hand-off. Waiters take turns on one lock; the
//! latency is from the holder's release to the next holder's acquire.
//! rlock-client's pub/sub waiting against fixed-interval polling. All
//! waiters share one client, so the acquire calls per hand-off show how
//! many waiters a release wakes: one per client, as in Redisson.

use crate::report::{ratio, Table};
use crate::server_info;
use redis::aio::ConnectionManager;
use rlock_client::Client;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use testkit::Server;
use tokio::sync::watch;

const WAITER_COUNTS: [usize; 3] = [2, 16, 64];
const HOLD: Duration = Duration::from_millis(1);
const LEASE_MS: i64 = 30_000;

#[derive(Clone, Copy)]
enum Waiting {
    PubSub,
    Poll(Duration),
}

impl Waiting {
    fn label(self) -> String {
        match self {
            Waiting::PubSub => "rlock-client pub/sub".into(),
            Waiting::Poll(interval) => format!("polling every {} ms", interval.as_millis()),
        }
    }

    /// Hand-offs to measure, and the time allowed for them.
    fn budget(self) -> (usize, Duration) {
        match self {
            Waiting::PubSub => (2000, Duration::from_secs(15)),
            Waiting::Poll(_) => (150, Duration::from_secs(10)),
        }
    }
}

struct Shared {
    /// When the current holder began its release.
    released_at: Mutex<Option<Instant>>,
    latencies: Mutex<Vec<Duration>>,
    /// Bumped at every acquire: a releaser re-queues once someone else
    /// took over, so the measured acquire is always a hand-off.
    acquisitions: watch::Sender<u64>,
}

impl Shared {
    fn acquired(&self) {
        let now = Instant::now();
        if let Some(released) = self.released_at.lock().expect("mutex").take() {
            self.latencies.lock().expect("mutex").push(now - released);
        }
        self.acquisitions.send_modify(|n| *n += 1);
    }

    fn releasing(&self) {
        *self.released_at.lock().expect("mutex") = Some(Instant::now());
    }
}

async fn waiter(waiting: Waiting, client: Client, mut connection: ConnectionManager, task: usize, shared: Arc<Shared>) {
    let lock = client.lock("handoff");
    let owner = format!("poller:{task}");
    let mut acquisitions = shared.acquisitions.subscribe();
    loop {
        match waiting {
            Waiting::PubSub => {
                let guard = lock.lock_with_lease(Duration::from_millis(LEASE_MS as u64)).await.expect("lock");
                shared.acquired();
                tokio::time::sleep(HOLD).await;
                acquisitions.borrow_and_update();
                shared.releasing();
                guard.unlock().await.expect("unlock");
            }
            Waiting::Poll(interval) => {
                let acquire = rlock_command("RLOCK.ACQUIRE", &owner);
                while acquire.query_async::<Option<i64>>(&mut connection).await.expect("acquire").is_some() {
                    tokio::time::sleep(interval).await;
                }
                shared.acquired();
                tokio::time::sleep(HOLD).await;
                acquisitions.borrow_and_update();
                shared.releasing();
                let _: Option<i64> =
                    rlock_command("RLOCK.RELEASE", &owner).query_async(&mut connection).await.expect("release");
            }
        }
        // Re-queue once someone else has taken over (marked seen before
        // the release, so the take-over cannot be missed).
        let _ = tokio::time::timeout(Duration::from_secs(1), acquisitions.changed()).await;
    }
}

fn rlock_command(name: &str, owner: &str) -> redis::Cmd {
    let mut cmd = redis::cmd(name);
    cmd.arg("handoff").arg(owner).arg(LEASE_MS);
    cmd
}

struct Outcome {
    p50: Duration,
    p99: Duration,
    handoffs: usize,
    attempts_per_handoff: f64,
}

async fn measure(server: &Server, waiting: Waiting, waiters: usize) -> Outcome {
    let client = Client::open(&server.url()).await.expect("client");
    let connection = ConnectionManager::new(server.client()).await.expect("connection");
    let shared = Arc::new(Shared {
        released_at: Mutex::new(None),
        latencies: Mutex::new(vec![]),
        acquisitions: watch::channel(0).0,
    });
    let counts_before = server_info::command_stat(server, "rlock.acquire", "calls");
    let tasks: Vec<_> = (0..waiters)
        .map(|task| tokio::spawn(waiter(waiting, client.clone(), connection.clone(), task, shared.clone())))
        .collect();
    let (target, budget) = waiting.budget();
    let started = Instant::now();
    while shared.latencies.lock().expect("mutex").len() < target && started.elapsed() < budget {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tasks.iter().for_each(|task| task.abort());
    for task in tasks {
        let _ = task.await;
    }
    let mut latencies = shared.latencies.lock().expect("mutex").clone();
    latencies.sort();
    let percentile = |p: usize| latencies.get(latencies.len() * p / 100).copied().unwrap_or_default();
    let attempts = server_info::command_stat(server, "rlock.acquire", "calls") - counts_before;
    let _: () = redis::cmd("DEL").arg("handoff").query(&mut server.connection()).expect("clean up");
    Outcome {
        p50: percentile(50),
        p99: percentile(99),
        handoffs: latencies.len(),
        attempts_per_handoff: attempts / latencies.len().max(1) as f64,
    }
}

fn ms(duration: Duration) -> String {
    format!("{:.3}", duration.as_secs_f64() * 1000.0)
}

/// What the summary needs from the pub/sub rows.
pub struct PubSubFigures {
    /// p50 hand-off latency per waiter count.
    pub p50s: Vec<Duration>,
    /// Acquire calls per hand-off with the most waiters in one client.
    pub calls_per_handoff_at_most_waiters: (usize, f64),
}

pub async fn run(server: &Server) -> (Table, PubSubFigures) {
    let strategies =
        [Waiting::PubSub, Waiting::Poll(Duration::from_millis(100)), Waiting::Poll(Duration::from_millis(200))];
    let mut table = Table::new(&[
        "waiters",
        "waiting",
        "hand-offs",
        "p50 ms",
        "p99 ms",
        "polling p50 ÷ pub/sub p50",
        "acquire calls per hand-off",
    ]);
    let mut figures = PubSubFigures { p50s: vec![], calls_per_handoff_at_most_waiters: (0, 0.0) };
    for waiters in WAITER_COUNTS {
        let mut pubsub_p50 = Duration::ZERO;
        for waiting in strategies {
            let outcome = measure(server, waiting, waiters).await;
            if matches!(waiting, Waiting::PubSub) {
                pubsub_p50 = outcome.p50;
                figures.p50s.push(outcome.p50);
                figures.calls_per_handoff_at_most_waiters = (waiters, outcome.attempts_per_handoff);
            }
            table.row(vec![
                waiters.to_string(),
                waiting.label(),
                outcome.handoffs.to_string(),
                ms(outcome.p50),
                ms(outcome.p99),
                match waiting {
                    Waiting::PubSub => "1.00×".into(),
                    Waiting::Poll(_) => ratio(outcome.p50.as_secs_f64(), pubsub_p50.as_secs_f64()),
                },
                format!("{:.1}", outcome.attempts_per_handoff),
            ]);
        }
    }
    (table, figures)
}
