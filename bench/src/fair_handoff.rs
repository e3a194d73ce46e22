//! Fair lock hand-off: waiters take turns on one hot fair lock, each
//! holding it 1 ms and queuing again at once. Compares rlock-client's
//! default waiting (a blocking connection per waiter), its pub/sub waiting
//! and Redisson's own loop over its fair scripts. Besides the hand-off
//! latency, it reports the longest time the lock sat free while someone
//! waited: what a stalled queue costs (issue 20).

use crate::report::Table;
use crate::server_info;
use futures_util::StreamExt;
use redis::aio::ConnectionManager;
use rlock_client::{Client, ClientOptions};
use rlock_protocol::{fair_queue_key, fair_timeout_key, fair_waiter_channel, DEFAULT_FAIR_WAIT_MS};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use testkit::{FairScripts, Server};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

const WAITER_COUNTS: [usize; 2] = [16, 64];
const HOLD: Duration = Duration::from_millis(1);
const LEASE: Duration = Duration::from_secs(30);
/// Hand-offs to measure, and the most time allowed for them: a stalled
/// queue ends its row at the budget (and shows in the longest free time).
const TARGET: usize = 1000;
const BUDGET: Duration = Duration::from_secs(4);

#[derive(Clone, Copy)]
enum Waiting {
    /// `ClientOptions::default()`, with a blocking connection per waiter.
    ClientDefault,
    /// `blocking_connections(0)`: every waiter waits by pub/sub.
    ClientPubSub,
    /// Redisson's loop over its fair scripts.
    Scripts,
}

impl Waiting {
    fn label(self) -> &'static str {
        match self {
            Waiting::ClientDefault => "rlock-client default waiting (`blocking_connections` = waiters)",
            Waiting::ClientPubSub => "rlock-client pub/sub (`blocking_connections(0)`)",
            Waiting::Scripts => "Redisson's fair scripts, own channel per waiter",
        }
    }

    fn slug(self) -> &'static str {
        match self {
            Waiting::ClientDefault => "default",
            Waiting::ClientPubSub => "pubsub",
            Waiting::Scripts => "scripts",
        }
    }
}

/// The hand-offs seen so far.
#[derive(Default)]
struct Turns {
    /// When the holder started its release; taken by the next grant.
    release_started: Option<Instant>,
    /// Whether anyone was waiting when it did.
    queued_at_release: bool,
    /// When its release replied, if no one was granted before that.
    release_done: Option<Instant>,
    latencies: Vec<Duration>,
    longest_free: Duration,
}

#[derive(Default)]
struct Shared {
    turns: Mutex<Turns>,
    /// Waiters that want the lock and do not hold it yet.
    waiting: AtomicUsize,
    /// The scripts' acquire calls (EVALSHA also counts their releases).
    script_acquires: AtomicU64,
}

impl Shared {
    fn wanting(&self) {
        self.waiting.fetch_add(1, Ordering::SeqCst);
    }

    fn acquired(&self) {
        let now = Instant::now();
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        let mut turns = self.turns.lock().expect("mutex");
        if let Some(started) = turns.release_started.take() {
            if turns.queued_at_release {
                turns.latencies.push(now - started);
                // Granted before the release replied: no free time seen.
                let free = turns.release_done.map_or(Duration::ZERO, |done| now.saturating_duration_since(done));
                turns.longest_free = turns.longest_free.max(free);
            }
        }
        turns.release_done = None;
    }

    fn releasing(&self) {
        let mut turns = self.turns.lock().expect("mutex");
        turns.release_started = Some(Instant::now());
        turns.queued_at_release = self.waiting.load(Ordering::SeqCst) > 0;
    }

    fn released(&self) {
        let mut turns = self.turns.lock().expect("mutex");
        if turns.release_started.is_some() {
            turns.release_done = Some(Instant::now());
        }
    }

    /// The longest free time, counting a lock still free at `end` while
    /// someone waits.
    fn longest_free(&self, end: Instant) -> Duration {
        let turns = self.turns.lock().expect("mutex");
        let still_free = match (turns.release_done, turns.queued_at_release) {
            (Some(done), true) => end.saturating_duration_since(done),
            _ => Duration::ZERO,
        };
        turns.longest_free.max(still_free)
    }
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("clock after 1970").as_millis() as i64
}

/// An rlock-client waiter: lock, hold, unlock, again.
async fn client_waiter(client: Client, name: String, shared: Arc<Shared>) {
    let lock = client.fair_lock(&name);
    loop {
        shared.wanting();
        let guard = lock.lock_with_lease(LEASE).await.expect("lock");
        shared.acquired();
        tokio::time::sleep(HOLD).await;
        shared.releasing();
        guard.unlock().await.expect("unlock");
        shared.released();
    }
}

/// Redisson's `lock()` on a fair lock: the waiting acquire (its
/// `fairLockWaitTimeout` as the wait); while refused, sleep for the hint
/// or until a message on the waiter's own channel. The channel is
/// subscribed once, up front (Redisson subscribes at each wait: one round
/// trip more per acquisition, not counted here).
async fn script_waiter(
    scripts: Arc<FairScripts>,
    mut con: ConnectionManager,
    messages: Arc<Semaphore>,
    name: String,
    owner: String,
    shared: Arc<Shared>,
) {
    let lease_ms = LEASE.as_millis() as i64;
    for request in 0u64.. {
        shared.wanting();
        // A message from an earlier wait does not count (Redisson's entry
        // is fresh at each subscription).
        messages.forget_permits(usize::MAX);
        loop {
            shared.script_acquires.fetch_add(1, Ordering::Relaxed);
            let acquire =
                scripts.acquire(name.as_bytes(), owner.as_bytes(), lease_ms, Some(DEFAULT_FAIR_WAIT_MS), now_ms());
            let Some(hint) = acquire.query_async::<Option<i64>>(&mut con).await.expect("acquire") else { break };
            let hint = Duration::from_millis(hint.max(0) as u64);
            if let Ok(Ok(permit)) = tokio::time::timeout(hint, messages.acquire()).await {
                permit.forget();
            }
        }
        shared.acquired();
        tokio::time::sleep(HOLD).await;
        shared.releasing();
        let request_id = format!("{owner}:{request}");
        let release = scripts.release(name.as_bytes(), owner.as_bytes(), lease_ms, request_id.as_bytes(), now_ms());
        let _: Option<i64> = release.query_async(&mut con).await.expect("release");
        shared.released();
    }
}

/// One pub/sub connection for all script waiters (as one Redisson client
/// has), each message a permit for the waiter whose channel it came on;
/// with the task that hands them out.
async fn script_channels(server: &Server, name: &str, owners: &[String]) -> (Vec<Arc<Semaphore>>, JoinHandle<()>) {
    let mut pubsub = server.client().get_async_pubsub().await.expect("pubsub");
    let mut by_channel = HashMap::new();
    let mut permits = Vec::new();
    for owner in owners {
        let channel = fair_waiter_channel(name.as_bytes(), owner.as_bytes());
        pubsub.subscribe(&channel).await.expect("subscribe");
        let messages = Arc::new(Semaphore::new(0));
        by_channel.insert(channel, messages.clone());
        permits.push(messages);
    }
    let dispatch = tokio::spawn(async move {
        let mut stream = pubsub.into_on_message();
        while let Some(message) = stream.next().await {
            if let Some(messages) = by_channel.get(message.get_channel_name().as_bytes()) {
                messages.add_permits(1);
            }
        }
    });
    (permits, dispatch)
}

struct Outcome {
    handoffs: usize,
    per_second: f64,
    p50: Duration,
    p99: Duration,
    longest_free: Duration,
    calls_per_handoff: f64,
}

async fn measure(server: &Server, waiting: Waiting, waiters: usize) -> Outcome {
    let name = format!("fair-handoff-{}-{waiters}", waiting.slug());
    let shared = Arc::new(Shared::default());
    let calls_before = server_info::command_stat(server, "rfair.acquire", "calls");
    let tasks: Vec<_> = match waiting {
        Waiting::ClientDefault | Waiting::ClientPubSub => {
            let connections = if matches!(waiting, Waiting::ClientDefault) { waiters } else { 0 };
            let options = ClientOptions::default().with_blocking_connections(connections);
            let client = Client::connect(server.client(), options).await.expect("client");
            (0..waiters).map(|_| tokio::spawn(client_waiter(client.clone(), name.clone(), shared.clone()))).collect()
        }
        Waiting::Scripts => {
            let scripts = Arc::new(FairScripts::default());
            scripts.load(&mut server.connection()).expect("load scripts");
            let con = ConnectionManager::new(server.client()).await.expect("connection");
            let owners: Vec<String> = (0..waiters).map(|n| format!("redisson-waiter:{n}")).collect();
            let (channels, dispatch) = script_channels(server, &name, &owners).await;
            let waiters = owners.into_iter().zip(channels).map(|(owner, messages)| {
                let waiter = script_waiter(scripts.clone(), con.clone(), messages, name.clone(), owner, shared.clone());
                tokio::spawn(waiter)
            });
            waiters.chain([dispatch]).collect()
        }
    };
    let started = Instant::now();
    while shared.turns.lock().expect("mutex").latencies.len() < TARGET && started.elapsed() < BUDGET {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let end = Instant::now();
    tasks.iter().for_each(|task| task.abort());
    for task in tasks {
        let _ = task.await;
    }
    let longest_free = shared.longest_free(end);
    let mut latencies = shared.turns.lock().expect("mutex").latencies.clone();
    latencies.sort();
    let percentile = |p: usize| latencies.get(latencies.len() * p / 100).copied().unwrap_or_default();
    let calls = match waiting {
        Waiting::Scripts => shared.script_acquires.load(Ordering::Relaxed) as f64,
        _ => server_info::command_stat(server, "rfair.acquire", "calls") - calls_before,
    };
    let keys = [name.clone().into_bytes(), fair_queue_key(name.as_bytes()), fair_timeout_key(name.as_bytes())];
    let _: () = redis::cmd("DEL").arg(&keys).query(&mut server.connection()).expect("clean up");
    Outcome {
        handoffs: latencies.len(),
        per_second: latencies.len() as f64 / (end - started).as_secs_f64(),
        p50: percentile(50),
        p99: percentile(99),
        longest_free,
        calls_per_handoff: calls / latencies.len().max(1) as f64,
    }
}

fn ms(duration: Duration) -> String {
    format!("{:.3}", duration.as_secs_f64() * 1000.0)
}

pub async fn run(server: &Server) -> Table {
    let mut table = Table::new(&[
        "waiters",
        "waiting",
        "hand-offs",
        "hand-offs/s",
        "p50 ms",
        "p99 ms",
        "longest free while queued, ms",
        "acquire calls per hand-off",
    ]);
    for waiters in WAITER_COUNTS {
        for waiting in [Waiting::ClientDefault, Waiting::ClientPubSub, Waiting::Scripts] {
            let outcome = measure(server, waiting, waiters).await;
            table.row(vec![
                waiters.to_string(),
                waiting.label().to_string(),
                outcome.handoffs.to_string(),
                format!("{:.0}", outcome.per_second),
                ms(outcome.p50),
                ms(outcome.p99),
                ms(outcome.longest_free),
                format!("{:.1}", outcome.calls_per_handoff),
            ]);
        }
    }
    table
}
