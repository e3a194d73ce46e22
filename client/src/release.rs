//! Giving holds back: RLOCK.RELEASE with Redisson's unlock latch, so that
//! a release whose reply was lost can be sent again with the same request
//! id and answers as the first one did (never dropping a second level).

use crate::client::RetryOptions;
use crate::connection::{key_slot, Connection};
use crate::error::{Error, Result};
use crate::holds::Released;
use crate::lock_state::LockId;
use crate::protocol;
use std::time::Duration;

/// Longest a server may take to answer one request before the client
/// gives up on it (redis-rs's default response timeout is 500 ms).
const RESPONSE_BOUND: Duration = Duration::from_secs(1);

/// Releases one hold of `id`, setting `lease_ms` when one remains.
/// Transient failures are retried with the same request id. In a cluster,
/// a name with `{` but no hash tag has its latch key in another slot,
/// which the module refuses: such a release goes without a latch, once.
pub(crate) async fn release(
    connection: &Connection,
    id: &LockId,
    lease_ms: i64,
    retry: &RetryOptions,
) -> Result<Released> {
    let request_id = protocol::request_id();
    let latch_key = protocol::unlock_latch_key(&id.name, request_id.as_bytes());
    let latched = !connection.is_cluster() || key_slot(&latch_key) == key_slot(&id.name);
    // The latch must outlive every retry of this release.
    let lifetime = (retry.delay + RESPONSE_BOUND).saturating_mul(retry.attempts.saturating_add(1));
    let latch = latched.then_some((request_id.as_bytes(), lifetime));
    let release = protocol::release(&id.name, &id.owner, lease_ms, latch);
    let retries = if latched { retry.attempts } else { 0 };
    let mut failures = 0;
    let reply = loop {
        match release.query_async::<Option<i64>>(&mut connection.clone()).await.map_err(Error::from) {
            Err(err) if err.is_transient() && failures < retries => {
                failures += 1;
                tokio::time::sleep(retry.delay).await;
            }
            reply => break reply?,
        }
    };
    if latched {
        // Done with the latch: drop it now rather than let it linger.
        let mut connection = connection.clone();
        tokio::spawn(async move { redis::cmd("DEL").arg(latch_key).query_async::<()>(&mut connection).await });
    }
    match reply {
        Some(1) => Ok(Released::Fully),
        Some(0) => Ok(Released::OneLevel),
        None => Ok(Released::NotHeld),
        Some(other) => Err(Error::UnexpectedReply(format!("RLOCK.RELEASE replied {other}"))),
    }
}
