//! Section 2: lock+unlock cycles per second through rlock-client, on
//! distinct locks, next to the cycles other callers send on a plain
//! redis-rs connection: Redisson 4.7.0's wire cycle, the pre-3.24 bare
//! script loop, the bare native loop, and the client's own commands sent
//! with no client logic.

mod counted;
mod loops;

use crate::report::{ratio, Table};
pub use counted::{count, ABOUT as COUNTED_ABOUT};
use loops::{bare_cycle, redisson_cycle, script_cycle, Cycle};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use rlock_client::Client;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use testkit::redisson_lock::VERSION;
use testkit::{RedissonScripts, Server};

const RUN: Duration = Duration::from_secs(2);
const TASK_COUNTS: [usize; 3] = [1, 16, 64];

/// Rounds per figure: the loops take turns, each figure is the median of
/// its rounds (this VM's throughput drifts by tens of percent over a run).
const ROUNDS: usize = 3;

/// The loops, in the order they take turns and are reported.
const LOOPS: [&str; 5] =
    ["rlock-client", "Redisson 4.7.0 wire cycle", "pre-3.24 scripts", "bare native", "client's commands bare"];
const CLIENT: usize = 0;
const REDISSON: usize = 1;
const PRE_3_24: usize = 2;
const BARE: usize = 3;

/// One loop's run: cycles per second, and (at one task) each cycle's time.
struct Run {
    per_sec: f64,
    latencies: Vec<Duration>,
}

/// Runs `cycle(task)` on `tasks` tasks for [`RUN`].
async fn run_loop(tasks: usize, cycle: impl Fn(usize) -> Cycle + Send + Sync + 'static) -> Run {
    let (cycle, done, stop) = (Arc::new(cycle), Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(false)));
    let latencies = Arc::new(Mutex::new(vec![]));
    let started = Instant::now();
    let handles: Vec<_> = (0..tasks)
        .map(|task| {
            let (cycle, done, stop, latencies) = (cycle.clone(), done.clone(), stop.clone(), latencies.clone());
            tokio::spawn(async move {
                let mut mine = vec![];
                while !stop.load(Ordering::Relaxed) {
                    let began = Instant::now();
                    cycle(task).await;
                    if tasks == 1 {
                        mine.push(began.elapsed());
                    }
                    done.fetch_add(1, Ordering::Relaxed);
                }
                latencies.lock().expect("latencies").extend(mine);
            })
        })
        .collect();
    tokio::time::sleep(RUN).await;
    stop.store(true, Ordering::Relaxed);
    for handle in handles {
        handle.await.expect("bench task");
    }
    let per_sec = done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64();
    let latencies = std::mem::take(&mut *latencies.lock().expect("latencies"));
    Run { per_sec, latencies }
}

/// Each task count's ratios of rlock-client's cycles to Redisson 4.7.0's
/// wire cycle, the pre-3.24 script loop and the bare native loop.
pub struct Ratios(pub Vec<(usize, [f64; 3])>);

impl Ratios {
    /// The Targets line.
    pub fn summary(&self) -> String {
        let against = |column: usize, targets: [&str; 3]| {
            let figures: Vec<String> = self
                .0
                .iter()
                .zip(targets)
                .map(|((tasks, ratios), target)| {
                    let tasks = if *tasks == 1 { "1 task".to_owned() } else { format!("{tasks} tasks") };
                    format!("{tasks} {:.2}×{target}", ratios[column])
                })
                .collect();
            figures.join(", ")
        };
        format!(
            "e2e vs Redisson {VERSION} wire cycle: {}; vs pre-3.24 scripts: {}; vs bare native: {}",
            against(0, [" (target 1.2×)", " (target 1.5×)", " (target 1.5×)"]),
            against(1, [" (target 1.0×)"; 3]),
            against(2, ["", " (target 0.85×)", " (target 0.85×)"]),
        )
    }
}

pub const ABOUT: &str = "\
Uncontended lock+unlock cycles per second, each task on its own lock; the loops take turns, 2 s
each, three rounds, and each figure is the median of its rounds. rlock-client runs `lock()` and
`unlock()` (watchdog lease, acquires resendable by the owner's count, latched releases, its own
connection). The others run on one shared redis-rs connection: Redisson 4.7.0's wire cycle as
Redisson sends it (`EVALSHA` of its acquire text, `EVALSHA` of its latched unlock text with the
lock's channel, a fresh latch key, `publish` and a 20000 ms latch, then the `DEL` of the latch sent
after the unlock's reply without waiting for it, as Redisson's `unlockInnerAsync` does); the
pre-3.24 bare script loop (acquire and unlock texts without a latch, nothing else); the bare native
loop (`RLOCK.ACQUIRE` and `RLOCK.RELEASE`, nothing else); and the client's commands sent bare (what
rlock-client sends per cycle, with no client logic).
";

pub async fn run(server: &Server) -> (Table, Table, Ratios) {
    let client = Client::open(&server.url()).await.expect("client");
    // Replies wait out a loaded machine (redis-rs gives up after 500 ms).
    let config = ConnectionManagerConfig::new().set_response_timeout(Some(Duration::from_secs(30)));
    let connection = ConnectionManager::new_with_config(server.client(), config).await.expect("connection");
    let scripts = Arc::new(RedissonScripts::default());
    scripts.load(&mut server.connection()).expect("load scripts");
    let redisson = loops::RedissonTexts::load(server);

    let mut table = Table::new(
        &[
            &["tasks (distinct locks)"][..],
            &LOOPS.map(|name| format!("{name} cycles/s")).iter().map(String::as_str).collect::<Vec<_>>(),
            &["rlock ÷ Redisson 4.7.0", "rlock ÷ pre-3.24", "rlock ÷ bare native"],
        ]
        .concat(),
    );
    let mut latencies: [Vec<Duration>; LOOPS.len()] = Default::default();
    let mut ratios = vec![];
    for tasks in TASK_COUNTS {
        let locks: Arc<Vec<_>> = Arc::new((0..tasks).map(|t| client.lock(format!("e2e:{t}"))).collect());
        let mut rounds: [Vec<f64>; LOOPS.len()] = Default::default();
        for _ in 0..ROUNDS {
            let locks = locks.clone();
            let client_cycle = move |task: usize| -> Cycle {
                let lock = locks[task].clone();
                Box::pin(async move {
                    let guard = lock.lock().await.expect("lock");
                    guard.unlock().await.expect("unlock");
                })
            };
            let runs = [
                run_loop(tasks, client_cycle).await,
                run_loop(tasks, redisson_cycle(redisson.clone(), connection.clone())).await,
                run_loop(tasks, script_cycle(scripts.clone(), connection.clone())).await,
                run_loop(tasks, bare_cycle(connection.clone(), "e2e-bare", false)).await,
                run_loop(tasks, bare_cycle(connection.clone(), "e2e-wire", true)).await,
            ];
            for ((round, all), run) in rounds.iter_mut().zip(&mut latencies).zip(runs) {
                round.push(run.per_sec);
                all.extend(run.latencies);
            }
        }
        let medians = rounds.map(median);
        let client_rate = medians[CLIENT];
        let against = [REDISSON, PRE_3_24, BARE].map(|other| client_rate / medians[other]);
        ratios.push((tasks, against));
        let mut row = vec![tasks.to_string()];
        row.extend(medians.iter().map(|rate| format!("{rate:.0}")));
        row.extend([REDISSON, PRE_3_24, BARE].map(|other| ratio(client_rate, medians[other])));
        table.row(row);
    }
    let mut latency = Table::new(&["one cycle at 1 task", "p50 µs", "p99 µs"]);
    for (name, mut all) in LOOPS.iter().zip(latencies) {
        all.sort();
        let at = |q: f64| all.get(((all.len() as f64 * q) as usize).min(all.len().saturating_sub(1)));
        let micros = |d: Option<&Duration>| d.map_or("n/a".into(), |d| format!("{:.0}", d.as_secs_f64() * 1e6));
        latency.row(vec![name.to_string(), micros(at(0.50)), micros(at(0.99))]);
    }
    (table, latency, Ratios(ratios))
}

fn median(mut figures: Vec<f64>) -> f64 {
    figures.sort_by(f64::total_cmp);
    figures[figures.len() / 2]
}
