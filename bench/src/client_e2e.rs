//! Section 2: lock+unlock cycles per second through rlock-client, on
//! distinct locks, next to the same cycle through Redisson-protocol
//! scripts on a plain redis-rs connection.

use crate::report::{ratio, Table};
use redis::aio::ConnectionManager;
use rlock_client::Client;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use testkit::{RedissonScripts, Server};

const RUN: Duration = Duration::from_secs(2);
const TASK_COUNTS: [usize; 3] = [1, 16, 64];

/// Runs `cycle(task)` on `tasks` tasks for [`RUN`]; cycles per second.
async fn cycles_per_sec<F, Fut>(tasks: usize, cycle: F) -> f64
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let (cycle, done, stop) = (Arc::new(cycle), Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(false)));
    let started = Instant::now();
    let handles: Vec<_> = (0..tasks)
        .map(|task| {
            let (cycle, done, stop) = (cycle.clone(), done.clone(), stop.clone());
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    cycle(task).await;
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    tokio::time::sleep(RUN).await;
    stop.store(true, Ordering::Relaxed);
    for handle in handles {
        handle.await.expect("bench task");
    }
    done.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

/// Keys a "wire" loop deletes in one `DEL`, as the client's sweeper
/// gathers the latch and record keys it no longer needs.
const SWEEP_EVERY: usize = 16;

/// Rounds per figure: the loops take turns, each figure is the median of
/// its rounds (this VM's throughput drifts by tens of percent over a run).
const ROUNDS: usize = 3;

/// Each task count's ratios to the bare script loop: rlock-client, the
/// bare native loop, the client's commands sent bare.
pub struct Ratios(pub Vec<(usize, [f64; 3])>);

impl Ratios {
    /// The Targets line: the issue's targets, and the ceilings beside them.
    pub fn summary(&self) -> String {
        let (mut client, mut ceilings) = (vec![], vec![]);
        for (tasks, [rlock, bare, wire]) in &self.0 {
            let target = if *tasks == 1 { 1.5 } else { 1.6 };
            client.push(format!("{tasks} task(s) {rlock:.2}× (target {target}×)"));
            ceilings.push(format!("{bare:.2}× and {wire:.2}×"));
        }
        format!(
            "{} the bare script loop; ceilings (a bare native loop, and the client's commands sent with no client logic): {}",
            client.join(", "),
            ceilings.join(", ")
        )
    }
}

pub async fn run(server: &Server) -> (Table, Ratios) {
    let client = Client::open(&server.url()).await.expect("client");
    let connection = ConnectionManager::new(server.client()).await.expect("connection");
    let scripts = Arc::new(RedissonScripts::default());
    scripts.load(&mut server.connection()).expect("load scripts");

    let mut table = Table::new(&[
        "tasks (distinct locks)",
        "rlock-client cycles/s",
        "scripts cycles/s",
        "rlock ÷ scripts",
        "bare native ÷ scripts",
        "client's commands ÷ scripts",
    ]);
    let mut ratios = vec![];
    for tasks in TASK_COUNTS {
        let locks: Arc<Vec<_>> = Arc::new((0..tasks).map(|t| client.lock(format!("e2e:{t}"))).collect());
        let mut rounds: [Vec<f64>; 4] = Default::default();
        for _ in 0..ROUNDS {
            let locks = locks.clone();
            rounds[0].push(
                cycles_per_sec(tasks, move |task| {
                    let lock = locks[task].clone();
                    async move {
                        let guard = lock.lock().await.expect("lock");
                        guard.unlock().await.expect("unlock");
                    }
                })
                .await,
            );
            rounds[1].push(cycles_per_sec(tasks, script_cycle(scripts.clone(), connection.clone())).await);
            rounds[2].push(cycles_per_sec(tasks, wire_cycle(connection.clone(), "e2e-bare", false)).await);
            rounds[3].push(cycles_per_sec(tasks, wire_cycle(connection.clone(), "e2e-wire", true)).await);
        }
        let [native, scripted, bare, wire] = rounds.map(median);
        ratios.push((tasks, [native / scripted, bare / scripted, wire / scripted]));
        table.row(vec![
            tasks.to_string(),
            format!("{native:.0}"),
            format!("{scripted:.0}"),
            ratio(native, scripted),
            ratio(bare, scripted),
            ratio(wire, scripted),
        ]);
    }
    (table, Ratios(ratios))
}

fn median(mut figures: Vec<f64>) -> f64 {
    figures.sort_by(f64::total_cmp);
    figures[figures.len() / 2]
}

type Cycle = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// The bare script loop: Redisson's acquire and release scripts, nothing else.
fn script_cycle(scripts: Arc<RedissonScripts>, connection: ConnectionManager) -> impl Fn(usize) -> Cycle + Send + Sync {
    move |task| {
        let (scripts, mut connection) = (scripts.clone(), connection.clone());
        Box::pin(async move {
            let (name, owner) = (format!("e2e-scripts:{task}"), format!("bench-owner:{task}"));
            let acquired: Option<i64> = scripts
                .acquire(name.as_bytes(), owner.as_bytes(), 30_000)
                .query_async(&mut connection)
                .await
                .expect("acquire");
            assert_eq!(acquired, None, "distinct locks are free");
            let _: Option<i64> = scripts
                .release(name.as_bytes(), owner.as_bytes(), 30_000)
                .query_async(&mut connection)
                .await
                .expect("release");
        })
    }
}

/// The ceilings a client on this machine can reach: a loop with no client
/// logic at all, sending `RLOCK.ACQUIRE` and `RLOCK.RELEASE` bare, or
/// (`as_client`) sending exactly what rlock-client sends per cycle: the
/// acquire named with a request id and `REPLY FULL`, the release with its
/// unlock latch, and a `DEL` of the record and latch keys every
/// [`SWEEP_EVERY`] cycles.
fn wire_cycle(
    connection: ConnectionManager,
    prefix: &'static str,
    as_client: bool,
) -> impl Fn(usize) -> Cycle + Send + Sync {
    let swept: Arc<Vec<std::sync::Mutex<Vec<Vec<u8>>>>> =
        Arc::new((0..TASK_COUNTS[TASK_COUNTS.len() - 1]).map(|_| Default::default()).collect());
    let next_id = Arc::new(AtomicU64::new(0));
    move |task| {
        let (mut connection, swept, next_id) = (connection.clone(), swept.clone(), next_id.clone());
        Box::pin(async move {
            let (name, owner) = (format!("{prefix}:{task}"), format!("bench-owner:{task}"));
            let mut acquire = redis::cmd("RLOCK.ACQUIRE");
            acquire.arg(&name).arg(&owner).arg(30_000);
            let mut release = redis::cmd("RLOCK.RELEASE");
            release.arg(&name).arg(&owner).arg(30_000);
            let mut keys = vec![];
            if as_client {
                let id = next_id.fetch_add(1, Ordering::Relaxed);
                let (acquire_id, release_id) = (format!("{id}-a"), format!("{id}-r"));
                acquire.arg("ID").arg(&acquire_id).arg("REPLY").arg("FULL");
                release.arg("ID").arg(&release_id).arg("PX").arg(30_000);
                keys.push(rlock_protocol::acquire_record_key(name.as_bytes(), acquire_id.as_bytes()));
                keys.push(rlock_protocol::unlock_latch_key(name.as_bytes(), release_id.as_bytes()));
            }
            let _: redis::Value = acquire.query_async(&mut connection).await.expect("acquire");
            let _: redis::Value = release.query_async(&mut connection).await.expect("release");
            let batch = {
                let mut pending = swept[task].lock().expect("sweep list");
                pending.extend(keys);
                (pending.len() >= 2 * SWEEP_EVERY).then(|| std::mem::take(&mut *pending))
            };
            if let Some(batch) = batch {
                let _: i64 = redis::cmd("DEL").arg(batch).query_async(&mut connection).await.expect("del");
            }
        })
    }
}
