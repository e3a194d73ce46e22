//! A moment by the server's clock, and waiting until that clock passes it:
//! the event a "nothing happened" check follows when the moment itself
//! (a lease's end, with the module's expiry timer due at it) leaves no
//! trace to wait on.

use crate::{eventually, server_time_ms, PATIENCE};
use redis::Connection;
use std::time::Duration;

/// When `key`'s lease ends, in the server's Unix ms; `None` when the key
/// has no expiry or is missing.
pub fn lease_end_ms(con: &mut Connection, key: &str) -> Option<i64> {
    let now = server_time_ms(con);
    let pttl: i64 = redis::cmd("PTTL").arg(key).query(con).expect("PTTL");
    (pttl >= 0).then_some(now + pttl)
}

/// Waits until the server's clock reads past `at_ms` (plus the 1 ms the
/// module's expiry timers fire after a lease's end); the server serves the
/// next command after the timers due by then.
pub fn until_server_time_past(con: &mut Connection, at_ms: i64) {
    let left = (at_ms - server_time_ms(con)).max(0) as u64;
    let what = format!("the server's clock past {at_ms}");
    eventually(&what, PATIENCE + Duration::from_millis(left), || server_time_ms(con) > at_ms + 1);
}
