//! Model-based test of the fair queue (issue 20): simulated waiters on one
//! fair lock of a real server, in real time on a short scale (waits of
//! 150-400 ms, leases of 100-500 ms): random arrivals, returns on a message
//! or at the hint's end (a quarter of them late, but within the wait),
//! gives-up, kills, early releases and leases left to run out. After every
//! step (and every idle tick) one atomic read of the lock, the queue and
//! the deadlines is held against a reference model:
//!
//! - order: a grant goes to no waiter behind a live one, and the queue holds
//!   the live waiters in arrival order (dead ones may linger);
//! - holder: the server's holder is the model's (a lease runs to its end);
//! - progress: the lock is never free while the first live waiter has
//!   waited past its bound: its turn (the lock freed, plus the waits of the
//!   dead waiters ahead, or their deadlines for Redisson's script waiters)
//!   plus its wait (at once for a blocked waiter) plus slack;
//! - a blocked waiter whose connection closes leaves the queue at once;
//! - after the run, every live waiter gets the lock.
//!
//! Waiters are native (`RFAIR.ACQUIRE … WAIT`, told on their channel),
//! Redisson's scripts (testkit's Lua, given the server's clock) or blocking
//! (`… WAIT … BLOCK`, granted by the server). A waiter the machine made
//! come back past its bound is excused ("lapsed"), and slack grows with the
//! lag measured. A live waiter the server dropped while the machine stalled
//! the driver is excused ("missed") only once the earliest the server may
//! rightly drop it had passed (at the snapshot that shows it gone, or at a
//! grant to a waiter behind it): its deadline as the server last showed it,
//! or, once its turn can have come, that turn plus its wait, whichever is
//! earlier. Its turn comes no earlier than the lock's freeing (the release's
//! send, the lease's end by the server's PTTL) and the earliest each native
//! waiter ahead could have left; a drop before that fails the test. The first
//! live waiter's return is bounded by that earliest turn plus its wait too:
//! the message that told its turn may reach a stalled driver late.
//! `RLOCK_SEED` replays a run's choices (timing may differ: the
//! step log is the reproduction); `RLOCK_FAIR_MODEL_MS` sets a run's length.

mod actions;
mod driver;
mod io;
mod model;

use driver::Driver;
use model::Kind;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use testkit::{Rng, Server};

const DEFAULT_RUN_MS: u64 = 3500;
const LOG_TAIL: usize = 400;

/// One run at a time: they keep time on a shared machine.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn run(mode: &str, kinds: &'static [Kind]) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let seed = Rng::seed_from_env(&format!("fair_model {mode}"));
    let run_ms = std::env::var("RLOCK_FAIR_MODEL_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(DEFAULT_RUN_MS);
    let server = Server::shared();
    if kinds.contains(&Kind::Block) {
        if let Err(reply) = io::block_supported(&mut server.connection()) {
            panic!("fair_model {mode}: the server does not support RFAIR.ACQUIRE … WAIT … BLOCK yet (probe: {reply})");
        }
    }
    let started = Instant::now();
    let mut driver = Driver::new(&server, seed, kinds);
    let outcome = driver.run(Duration::from_millis(run_ms));
    let stats = &driver.stats;
    if let Err(failure) = outcome {
        let tail = driver.log[driver.log.len().saturating_sub(LOG_TAIL)..].join("\n");
        panic!(
            "fair_model {mode}: {failure}\nreplay: RLOCK_SEED={seed}\n{stats:?}\n\
             --- last steps (ms since start; uid, kind p/s/b is in the owner) ---\n{tail}"
        );
    }
    eprintln!("fair_model {mode}: passed in {:.1} s: {stats:?}", started.elapsed().as_secs_f64());
}

#[test]
fn native_waiters_keep_arrival_order_and_progress() {
    run("native", &[Kind::Poll]);
}

#[test]
fn waiters_mixed_with_redisson_scripts_keep_arrival_order_and_progress() {
    run("mixed", &[Kind::Poll, Kind::Script]);
}

#[test]
fn blocking_waiters_among_native_pollers_keep_arrival_order_and_progress() {
    run("blocking", &[Kind::Block, Kind::Poll]);
}

#[test]
fn blocking_waiters_among_pollers_and_scripts_keep_arrival_order_and_progress() {
    run("blocking mixed", &[Kind::Block, Kind::Poll, Kind::Script]);
}
