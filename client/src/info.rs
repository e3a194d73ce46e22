//! What the server holds for a lock, as `RLOCK.INSPECT` tells it
//! ([`Lock::info`](crate::Lock::info)): for operators, dashboards and
//! tests. A snapshot, read at once, of whoever holds the lock. Its flat
//! `name value …` readers serve [`crate::listing`] too.

use crate::error::{Error, Result};
use redis::Value;
use std::collections::HashMap;
use std::time::Duration;

/// One `RLOCK.INSPECT` reply.
///
/// ```no_run
/// # async fn example(client: rlock_client::Client) -> rlock_client::Result<()> {
/// let info = client.lock("orders:42").info().await?;
/// println!("{} lock, ttl {:?}", info.kind, info.ttl);
/// for holder in &info.holders {
///     println!("held {} times by {}", holder.holds, String::from_utf8_lossy(&holder.owner));
/// }
/// println!("{} waiting on the server", info.waiters.len());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LockInfo {
    /// `lock`, `fair`, `read-write`, `fenced`, `permit-semaphore`,
    /// `counter`, `other` (no lock's data) or `none` (no key).
    pub kind: String,
    /// The key's time to live; `None` when it has no expiry or no key.
    pub ttl: Option<Duration>,
    /// Whoever holds it, each with its holds and lease.
    pub holders: Vec<HolderInfo>,
    /// A fenced lock's last token.
    pub token: Option<i64>,
    /// The callers blocked on the lock on the server.
    pub waiters: Vec<WaiterInfo>,
}

/// A holder of the lock.
///
/// ```no_run
/// # async fn example(client: rlock_client::Client) -> rlock_client::Result<()> {
/// let catalog = client.read_write_lock("catalog");
/// for holder in catalog.read().info().await?.holders {
///     let side = holder.side.as_deref().unwrap_or("-");
///     println!("{side} held by {}, lease left {:?}", String::from_utf8_lossy(&holder.owner), holder.lease);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HolderInfo {
    /// Its owner id ([`Lock::owner`](crate::Lock::owner), Redisson's
    /// `<uuid>:<thread id>`).
    pub owner: Vec<u8>,
    /// Its hold count (re-entries).
    pub holds: u64,
    /// The lease it has left; `None` without expiry.
    pub lease: Option<Duration>,
    /// A read-write lock's side: `read` or `write`.
    pub side: Option<String>,
}

/// A caller blocked on the lock on the server.
///
/// ```no_run
/// # async fn example(client: rlock_client::Client) -> rlock_client::Result<()> {
/// for waiter in client.lock("orders:42").info().await?.waiters {
///     println!("client {} waited {:?}, {:?} to go", waiter.client_id, waiter.waited, waiter.wait_left);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct WaiterInfo {
    /// The owner it waits to be granted the lock as.
    pub owner: Vec<u8>,
    /// Its connection (`CLIENT ID`).
    pub client_id: u64,
    /// How long it has waited.
    pub waited: Duration,
    /// How long it will wait still.
    pub wait_left: Duration,
}

impl LockInfo {
    pub(crate) fn parse(reply: Value) -> Result<Self> {
        let fields = pairs(reply)?;
        let holders = list(&fields, "holders")?.into_iter().map(HolderInfo::parse).collect::<Result<_>>()?;
        let waiters = list(&fields, "waiters")?.into_iter().map(WaiterInfo::parse).collect::<Result<_>>()?;
        Ok(LockInfo {
            kind: text(&fields, "kind")?,
            ttl: lease(int(&fields, "ttl_ms")?),
            holders,
            token: fields.get("token").map(|_| int(&fields, "token")).transpose()?,
            waiters,
        })
    }
}

impl HolderInfo {
    fn parse(reply: Value) -> Result<Self> {
        let fields = pairs(reply)?;
        Ok(HolderInfo {
            owner: bytes(&fields, "owner")?,
            holds: int(&fields, "holds")?.max(0) as u64,
            lease: lease(int(&fields, "lease_ms")?),
            side: fields.get("side").map(|_| text(&fields, "side")).transpose()?,
        })
    }
}

impl WaiterInfo {
    fn parse(reply: Value) -> Result<Self> {
        let fields = pairs(reply)?;
        let ms = |name| Ok::<_, Error>(Duration::from_millis(int(&fields, name)?.max(0) as u64));
        Ok(WaiterInfo {
            owner: bytes(&fields, "owner")?,
            client_id: int(&fields, "client_id")?.max(0) as u64,
            waited: ms("waited_ms")?,
            wait_left: ms("wait_left_ms")?,
        })
    }
}

/// A PTTL as a duration: `None` for no expiry (-1) or no key (-2).
pub(crate) fn lease(ms: i64) -> Option<Duration> {
    u64::try_from(ms).ok().map(Duration::from_millis)
}

pub(crate) type Fields = HashMap<String, Value>;

fn unexpected(what: impl std::fmt::Debug) -> Error {
    Error::UnexpectedReply(format!("{what:?}"))
}

/// A flat `name value …` array as a map.
pub(crate) fn pairs(reply: Value) -> Result<Fields> {
    let Value::Array(items) = reply else { return Err(unexpected(reply)) };
    items
        .chunks(2)
        .map(|pair| match pair {
            [name, value] => Ok((redis::from_redis_value(name.clone()).map_err(unexpected)?, value.clone())),
            _ => Err(unexpected(pair)),
        })
        .collect()
}

fn field<'a>(fields: &'a Fields, name: &str) -> Result<&'a Value> {
    fields.get(name).ok_or_else(|| unexpected(format!("no {name}")))
}

pub(crate) fn int(fields: &Fields, name: &str) -> Result<i64> {
    redis::from_redis_value(field(fields, name)?.clone()).map_err(unexpected)
}

pub(crate) fn text(fields: &Fields, name: &str) -> Result<String> {
    redis::from_redis_value(field(fields, name)?.clone()).map_err(unexpected)
}

pub(crate) fn bytes(fields: &Fields, name: &str) -> Result<Vec<u8>> {
    redis::from_redis_value(field(fields, name)?.clone()).map_err(unexpected)
}

fn list(fields: &Fields, name: &str) -> Result<Vec<Value>> {
    match fields.get(name) {
        None => Ok(vec![]),
        Some(Value::Array(items)) => Ok(items.clone()),
        Some(other) => Err(unexpected(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Value::{Array, BulkString, Int, SimpleString};

    fn flat(fields: &[(&str, Value)]) -> Value {
        Array(fields.iter().flat_map(|(name, value)| [BulkString(name.as_bytes().to_vec()), value.clone()]).collect())
    }

    #[test]
    fn an_inspection_reads_into_lock_info() {
        let holder = flat(&[
            ("owner", BulkString(b"o1".to_vec())),
            ("holds", Int(2)),
            ("lease_ms", Int(900)),
            ("side", SimpleString("read".into())),
        ]);
        let waiter = flat(&[
            ("db", Int(0)),
            ("key", BulkString(b"k".to_vec())),
            ("kind", SimpleString("lock".into())),
            ("owner", BulkString(b"o2".to_vec())),
            ("client_id", Int(7)),
            ("waited_ms", Int(30)),
            ("wait_left_ms", Int(70)),
        ]);
        let reply = flat(&[
            ("kind", SimpleString("read-write".into())),
            ("ttl_ms", Int(-1)),
            ("holders", Array(vec![holder])),
            ("mode", SimpleString("read".into())),
            ("waiters", Array(vec![waiter])),
        ]);
        let info = LockInfo::parse(reply).unwrap();
        assert_eq!((info.kind.as_str(), info.ttl, info.token), ("read-write", None, None));
        let expected = HolderInfo {
            owner: b"o1".to_vec(),
            holds: 2,
            lease: Some(Duration::from_millis(900)),
            side: Some("read".into()),
        };
        assert_eq!(info.holders, [expected]);
        let waited = WaiterInfo {
            owner: b"o2".to_vec(),
            client_id: 7,
            waited: Duration::from_millis(30),
            wait_left: Duration::from_millis(70),
        };
        assert_eq!(info.waiters, [waited]);
        assert!(matches!(LockInfo::parse(Int(1)), Err(Error::UnexpectedReply(_))));
    }
}
