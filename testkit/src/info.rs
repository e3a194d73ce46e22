//! What a server shows in `INFO`: one field, the module's counters, and a
//! command's calls, read over a plain or an async connection.

use redis::{aio, Connection};

/// The field `name` of `INFO section`, trimmed; `None` when absent.
pub fn info_field(con: &mut Connection, section: &str, name: &str) -> Option<String> {
    let text: String = redis::cmd("INFO").arg(section).query(con).expect("INFO");
    field(&text, name)
}

/// A counter of the module's `INFO rlock` section (`rlock_` left out of
/// `name`); 0 when absent.
pub fn rlock_info(con: &mut Connection, name: &str) -> i64 {
    number(info_field(con, "rlock", &format!("rlock_{name}")))
}

/// How many times the server ran `command` (lower case), from `INFO commandstats`.
pub fn calls(con: &mut Connection, command: &str) -> u64 {
    calls_in(info_field(con, "commandstats", &format!("cmdstat_{command}")))
}

/// [`info_field`] over an async connection.
pub async fn info_field_async(con: &mut impl aio::ConnectionLike, section: &str, name: &str) -> Option<String> {
    let text: String = redis::cmd("INFO").arg(section).query_async(con).await.expect("INFO");
    field(&text, name)
}

/// [`rlock_info`] over an async connection.
pub async fn rlock_info_async(con: &mut impl aio::ConnectionLike, name: &str) -> i64 {
    number(info_field_async(con, "rlock", &format!("rlock_{name}")).await)
}

/// [`calls`] over an async connection.
pub async fn calls_async(con: &mut impl aio::ConnectionLike, command: &str) -> u64 {
    calls_in(info_field_async(con, "commandstats", &format!("cmdstat_{command}")).await)
}

fn field(text: &str, name: &str) -> Option<String> {
    let prefix = format!("{name}:");
    text.lines().find_map(|line| line.strip_prefix(&prefix)).map(|value| value.trim().to_owned())
}

fn number(value: Option<String>) -> i64 {
    value.map_or(0, |value| value.parse().unwrap_or_else(|_| panic!("not a number: {value}")))
}

/// `calls=N,usec=…` → N.
fn calls_in(stats: Option<String>) -> u64 {
    stats.and_then(|stats| stats.split(',').find_map(|part| part.strip_prefix("calls=")?.parse().ok())).unwrap_or(0)
}
