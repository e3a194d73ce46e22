//! Section 4: one client holding 10,000 watchdog locks. Round trips per
//! renewal period, RENEW calls the server saw, and the client's CPU time
//! per period.

use crate::report::Table;
use crate::server_info;
use rlock_client::{Client, ClientOptions};
use std::time::Duration;
use testkit::Server;

const LOCKS: usize = 10_000;
const WATCHDOG_TIMEOUT: Duration = Duration::from_secs(3);
const PERIODS: u32 = 5;

/// User plus system CPU time of this process.
fn cpu_time() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

pub async fn run(server: &Server) -> (Table, f64) {
    let options = ClientOptions::default().with_watchdog_timeout(WATCHDOG_TIMEOUT);
    let client = Client::connect(server.client(), options).await.expect("client");
    let mut pending = tokio::task::JoinSet::new();
    for n in 0..LOCKS {
        let lock = client.lock(format!("watchdog:{n}"));
        pending.spawn(async move { lock.lock().await.expect("lock") });
    }
    let mut guards = Vec::with_capacity(LOCKS);
    while let Some(guard) = pending.join_next().await {
        guards.push(guard.expect("lock task"));
    }

    let period = WATCHDOG_TIMEOUT / 3;
    tokio::time::sleep(period).await;
    let (stats_before, cpu_before, renews_before) =
        (client.watchdog_stats(), cpu_time(), server_info::command_stat(server, "rlock.renew", "calls"));
    tokio::time::sleep(period * PERIODS).await;
    let (stats_after, cpu_after, renews_after) =
        (client.watchdog_stats(), cpu_time(), server_info::command_stat(server, "rlock.renew", "calls"));

    let periods = f64::from(PERIODS);
    let rounds = (stats_after.rounds - stats_before.rounds) as f64 / periods;
    let renewals = (renews_after - renews_before) / periods;
    let cpu_ms = (cpu_after - cpu_before).as_secs_f64() * 1000.0 / periods;
    let mut table = Table::new(&[
        "locks held",
        "period",
        "round trips per period",
        "RENEW calls per period",
        "client CPU ms per period",
        "lost",
    ]);
    table.row(vec![
        stats_after.locks.to_string(),
        format!("{} ms", period.as_millis()),
        format!("{rounds:.1}"),
        format!("{renewals:.0}"),
        format!("{cpu_ms:.1}"),
        stats_after.lost.to_string(),
    ]);
    for guard in guards {
        guard.unlock().await.expect("unlock");
    }
    (table, rounds)
}
