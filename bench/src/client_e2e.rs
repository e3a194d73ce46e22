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

const RUN: Duration = Duration::from_secs(3);
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

pub async fn run(server: &Server) -> Table {
    let client = Client::open(&server.url()).await.expect("client");
    let connection = ConnectionManager::new(server.client()).await.expect("connection");
    let scripts = Arc::new(RedissonScripts::default());
    scripts.load(&mut server.connection()).expect("load scripts");

    let mut table =
        Table::new(&["tasks (distinct locks)", "rlock-client cycles/s", "scripts cycles/s", "rlock ÷ scripts"]);
    for tasks in TASK_COUNTS {
        let locks: Arc<Vec<_>> = Arc::new((0..tasks).map(|t| client.lock(format!("e2e:{t}"))).collect());
        let native = cycles_per_sec(tasks, move |task| {
            let lock = locks[task].clone();
            async move {
                let guard = lock.lock().await.expect("lock");
                guard.unlock().await.expect("unlock");
            }
        })
        .await;
        let (scripts, connection) = (scripts.clone(), connection.clone());
        let scripted = cycles_per_sec(tasks, move |task| {
            let (scripts, mut connection) = (scripts.clone(), connection.clone());
            async move {
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
            }
        })
        .await;
        table.row(vec![tasks.to_string(), format!("{native:.0}"), format!("{scripted:.0}"), ratio(native, scripted)]);
    }
    table
}
