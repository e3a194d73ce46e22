//! Section 3: contended hand-off. Waiters take turns on one lock; the
//! latency is from the holder's release to the next holder's acquire.
//! rlock-client's pub/sub waiting, Redisson's own way (its scripts, one
//! subscription per client whose messages each let one waiter try again)
//! and fixed-interval polling. Most rows share one client among the
//! waiters, so the acquire calls per hand-off show how many waiters a
//! release wakes; "a client per waiter" is a fleet of services, one waiter
//! each, where every release wakes every waiter.

use crate::report::{ratio, Table};
use crate::server_info;
use redis::aio::ConnectionManager;
use rlock_client::{Client, ClientOptions};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use testkit::{RedissonScripts, Server};
use tokio::sync::{watch, Semaphore};

const WAITER_COUNTS: [usize; 3] = [2, 16, 64];
const HOLD: Duration = Duration::from_millis(1);
const LEASE_MS: i64 = 30_000;
/// How long a blocking acquire waits before it asks again.
const BLOCKING_WAIT_MS: i64 = 10_000;

#[derive(Clone, Copy)]
enum Waiting {
    /// `RLOCK.ACQUIRE … WAIT`: the server grants the lock in arrival order.
    Blocking,
    /// rlock-client's blocking mode (a dedicated connection per waiter).
    ClientBlocking,
    PubSub,
    /// rlock-client pub/sub with a client of its own per waiter.
    PubSubClientPerWaiter,
    Scripts,
    Poll(Duration),
}

impl Waiting {
    fn label(self) -> String {
        match self {
            Waiting::Blocking => "blocking FIFO (`RLOCK.ACQUIRE … WAIT`)".into(),
            Waiting::ClientBlocking => "rlock-client blocking mode".into(),
            Waiting::PubSub => "rlock-client pub/sub".into(),
            Waiting::PubSubClientPerWaiter => "rlock-client pub/sub, a client per waiter".into(),
            Waiting::Scripts => "Redisson-protocol scripts, pub/sub".into(),
            Waiting::Poll(interval) => format!("polling every {} ms", interval.as_millis()),
        }
    }

    /// Hand-offs to measure, and the time allowed for them.
    fn budget(self) -> (usize, Duration) {
        match self {
            Waiting::Poll(_) => (150, Duration::from_secs(10)),
            _ => (2000, Duration::from_secs(15)),
        }
    }
}

struct Shared {
    /// When the current holder began its release.
    released_at: Mutex<Option<Instant>>,
    latencies: Mutex<Vec<Duration>>,
    /// Each acquire's wait, from wanting the lock to holding it.
    waits: Mutex<Vec<Duration>>,
    /// Acquire calls counted by the waiters (the scripts' share EVALSHA
    /// with their releases in the server's statistics).
    acquire_calls: AtomicU64,
    /// Bumped at every acquire: a releaser re-queues once someone else
    /// took over, so the measured acquire is always a hand-off.
    acquisitions: watch::Sender<u64>,
}

impl Shared {
    fn acquired(&self, wanted_at: Instant) {
        let now = Instant::now();
        self.waits.lock().expect("mutex").push(now - wanted_at);
        if let Some(released) = self.released_at.lock().expect("mutex").take() {
            self.latencies.lock().expect("mutex").push(now - released);
        }
        self.acquisitions.send_modify(|n| *n += 1);
    }

    fn releasing(&self) {
        *self.released_at.lock().expect("mutex") = Some(Instant::now());
    }
}

/// Redisson's waiting: one subscription per client; every message lets
/// one waiter try again (a semaphore, so a message never goes missing).
struct ScriptWaiting {
    scripts: Arc<RedissonScripts>,
    messages: Arc<Semaphore>,
}

async fn waiter(
    waiting: Waiting,
    client: Client,
    mut connection: ConnectionManager,
    redis: redis::Client,
    scripts: Arc<ScriptWaiting>,
    task: usize,
    shared: Arc<Shared>,
) {
    let lock = client.lock("handoff");
    let owner = format!("waiter:{task}");
    let mut acquisitions = shared.acquisitions.subscribe();
    // A blocking call needs a connection of its own, without a reply timeout.
    let mut dedicated = match waiting {
        Waiting::Blocking => {
            let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
            Some(redis.get_multiplexed_async_connection_with_config(&config).await.expect("connection"))
        }
        _ => None,
    };
    loop {
        let wanted_at = Instant::now();
        match waiting {
            Waiting::PubSub | Waiting::ClientBlocking | Waiting::PubSubClientPerWaiter => {
                let guard = lock.lock_with_lease(Duration::from_millis(LEASE_MS as u64)).await.expect("lock");
                hold(&shared, wanted_at, &mut acquisitions).await;
                guard.unlock().await.expect("unlock");
            }
            Waiting::Scripts => {
                let acquire = scripts.scripts.acquire(b"handoff", owner.as_bytes(), LEASE_MS);
                loop {
                    shared.acquire_calls.fetch_add(1, Ordering::Relaxed);
                    let Some(ttl) = acquire.query_async::<Option<i64>>(&mut connection).await.expect("acquire") else {
                        break;
                    };
                    let message = scripts.messages.acquire();
                    if let Ok(Ok(permit)) = tokio::time::timeout(Duration::from_millis(ttl as u64), message).await {
                        permit.forget();
                    }
                }
                hold(&shared, wanted_at, &mut acquisitions).await;
                let release = scripts.scripts.release(b"handoff", owner.as_bytes(), LEASE_MS);
                let _: Option<i64> = release.query_async(&mut connection).await.expect("release");
            }
            Waiting::Blocking => {
                let dedicated = dedicated.as_mut().expect("opened above");
                let mut acquire = rlock_command("RLOCK.ACQUIRE", &owner);
                acquire.arg("WAIT").arg(BLOCKING_WAIT_MS);
                while acquire.query_async::<Option<i64>>(dedicated).await.expect("acquire").is_some() {}
                hold(&shared, wanted_at, &mut acquisitions).await;
                let _: Option<i64> =
                    rlock_command("RLOCK.RELEASE", &owner).query_async(dedicated).await.expect("release");
            }
            Waiting::Poll(interval) => {
                let acquire = rlock_command("RLOCK.ACQUIRE", &owner);
                while acquire.query_async::<Option<i64>>(&mut connection).await.expect("acquire").is_some() {
                    tokio::time::sleep(interval).await;
                }
                hold(&shared, wanted_at, &mut acquisitions).await;
                let _: Option<i64> =
                    rlock_command("RLOCK.RELEASE", &owner).query_async(&mut connection).await.expect("release");
            }
        }
        // Re-queue once someone else has taken over (marked seen before
        // the release, so the take-over cannot be missed).
        let _ = tokio::time::timeout(Duration::from_secs(1), acquisitions.changed()).await;
    }
}

/// The critical section, then the mark that its holder starts releasing.
async fn hold(shared: &Shared, wanted_at: Instant, acquisitions: &mut watch::Receiver<u64>) {
    shared.acquired(wanted_at);
    tokio::time::sleep(HOLD).await;
    acquisitions.borrow_and_update();
    shared.releasing();
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
    handoffs_per_second: f64,
    attempts_per_handoff: f64,
    /// The longest wait over the mean wait: 1 when every waiter waits alike.
    fairness: f64,
}

/// Starts Redisson's per-client subscription to the lock's channel.
async fn script_waiting(server: &Server) -> Arc<ScriptWaiting> {
    use futures_util::StreamExt;
    let scripts = RedissonScripts::default();
    scripts.load(&mut server.connection()).expect("load scripts");
    let mut pubsub = server.client().get_async_pubsub().await.expect("pubsub");
    pubsub.subscribe(rlock_protocol::release_channel(b"handoff")).await.expect("subscribe");
    let messages = Arc::new(Semaphore::new(0));
    let permits = messages.clone();
    tokio::spawn(async move {
        let mut stream = pubsub.into_on_message();
        while stream.next().await.is_some() {
            permits.add_permits(1);
        }
    });
    Arc::new(ScriptWaiting { scripts: Arc::new(scripts), messages })
}

async fn measure(server: &Server, waiting: Waiting, waiters: usize) -> Outcome {
    let options = match waiting {
        Waiting::ClientBlocking => ClientOptions::default().with_blocking_connections(waiters),
        _ => ClientOptions::default().with_blocking_connections(0),
    };
    let client = Client::connect(server.client(), options.clone()).await.expect("client");
    let connection = ConnectionManager::new(server.client()).await.expect("connection");
    let scripts = script_waiting(server).await;
    let shared = Arc::new(Shared {
        released_at: Mutex::new(None),
        latencies: Mutex::new(vec![]),
        waits: Mutex::new(vec![]),
        acquire_calls: AtomicU64::new(0),
        acquisitions: watch::channel(0).0,
    });
    let counts_before = server_info::command_stat(server, "rlock.acquire", "calls");
    let mut clients = Vec::with_capacity(waiters);
    for _ in 0..waiters {
        clients.push(match waiting {
            Waiting::PubSubClientPerWaiter => Client::connect(server.client(), options.clone()).await.expect("client"),
            _ => client.clone(),
        });
    }
    let tasks: Vec<_> = (0..waiters)
        .map(|task| {
            let waiter = waiter(
                waiting,
                clients[task].clone(),
                connection.clone(),
                server.client(),
                scripts.clone(),
                task,
                shared.clone(),
            );
            tokio::spawn(waiter)
        })
        .collect();
    let (target, budget) = waiting.budget();
    let started = Instant::now();
    while shared.latencies.lock().expect("mutex").len() < target && started.elapsed() < budget {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let elapsed = started.elapsed();
    tasks.iter().for_each(|task| task.abort());
    for task in tasks {
        let _ = task.await;
    }
    let mut latencies = shared.latencies.lock().expect("mutex").clone();
    latencies.sort();
    let percentile = |p: usize| latencies.get(latencies.len() * p / 100).copied().unwrap_or_default();
    let attempts = match waiting {
        Waiting::Scripts => shared.acquire_calls.load(Ordering::Relaxed) as f64,
        _ => server_info::command_stat(server, "rlock.acquire", "calls") - counts_before,
    };
    let waits = shared.waits.lock().expect("mutex").clone();
    let mean_wait = waits.iter().sum::<Duration>().as_secs_f64() / waits.len().max(1) as f64;
    let max_wait = waits.iter().max().copied().unwrap_or_default().as_secs_f64();
    let _: () = redis::cmd("DEL").arg("handoff").query(&mut server.connection()).expect("clean up");
    Outcome {
        p50: percentile(50),
        p99: percentile(99),
        handoffs: latencies.len(),
        handoffs_per_second: latencies.len() as f64 / elapsed.as_secs_f64(),
        attempts_per_handoff: attempts / latencies.len().max(1) as f64,
        fairness: if mean_wait > 0.0 { max_wait / mean_wait } else { 0.0 },
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
    let strategies = [
        Waiting::PubSub,
        Waiting::PubSubClientPerWaiter,
        Waiting::Blocking,
        Waiting::ClientBlocking,
        Waiting::Scripts,
        Waiting::Poll(Duration::from_millis(100)),
        Waiting::Poll(Duration::from_millis(200)),
    ];
    let mut table = Table::new(&[
        "waiters",
        "waiting",
        "hand-offs",
        "hand-offs/s",
        "p50 ms",
        "p99 ms",
        "p50 ÷ pub/sub p50",
        "acquire calls per hand-off",
        "max wait ÷ mean wait",
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
                format!("{:.0}", outcome.handoffs_per_second),
                ms(outcome.p50),
                ms(outcome.p99),
                ratio(outcome.p50.as_secs_f64(), pubsub_p50.as_secs_f64()),
                format!("{:.1}", outcome.attempts_per_handoff),
                format!("{:.1}", outcome.fairness),
            ]);
        }
    }
    (table, figures)
}
