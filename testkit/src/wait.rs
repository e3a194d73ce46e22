//! Waiting on what a server shows, never on time alone: [`eventually`]
//! (threads) and [`eventually!`](crate::eventually!) (async) poll a
//! condition until it holds, bounded by a deadline.

use std::time::{Duration, Instant};

/// How long a test waits for something that should happen promptly.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// How often a condition is polled.
pub const POLL: Duration = Duration::from_millis(5);

/// Polls `check` until it holds, failing the test after `patience`.
pub fn eventually(what: &str, patience: Duration, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + patience;
    while !check() {
        assert!(Instant::now() < deadline, "timed out after {patience:?} waiting for {what}");
        std::thread::sleep(POLL);
    }
}

/// Polls an async condition until it holds, failing the test after
/// [`PATIENCE`] (or the patience given):
/// `eventually!("the waiter blocked", info(&server, "blocked").await == 1)`.
#[macro_export]
macro_rules! eventually {
    ($what:expr, $check:expr) => {
        $crate::eventually!($what, $crate::PATIENCE, $check)
    };
    ($what:expr, $patience:expr, $check:expr) => {{
        let patience: ::std::time::Duration = $patience;
        let deadline = ::std::time::Instant::now() + patience;
        while !$check {
            assert!(::std::time::Instant::now() < deadline, "timed out after {patience:?} waiting for {}", $what);
            ::tokio::time::sleep($crate::POLL).await;
        }
    }};
}
