//! Giving holds back: the kind's release with Redisson's unlock latch, so that
//! a release whose reply was lost can be sent again with the same request
//! id and answers as the first one did (never dropping a second level).

use crate::engine::commands::Latch;
use crate::engine::holds::Released;
use crate::engine::lock_state::LockId;
use crate::engine::protocol::{self, is_syntax_error};
use crate::error::{Error, Result};
use crate::options::RetryOptions;
use crate::shared::Shared;
use crate::transport::connection::Connection;
use rlock_protocol::key_slot;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Longest a server may take to answer one request before the client
/// gives up on it, at the least (redis-rs's default response timeout is
/// 500 ms); a longer configured reply timeout counts instead.
const RESPONSE_BOUND: Duration = Duration::from_secs(1);

/// Releases one hold of `id` on `connection`, setting `lease_ms` when one
/// remains. Transient failures are retried with the same request id.
///
/// Without a latch a release is sent once (see `transport::cluster::send_once`;
/// in a cluster no layer sends it again either): in a cluster, for a name
/// with `{` but no hash tag (its latch key is in another slot, which the
/// module refuses), and for an ACL user who may not touch latch keys (the
/// module refuses before changing anything; the client then stops asking).
pub(crate) async fn release(shared: &Shared, connection: &Connection, id: &LockId, lease_ms: i64) -> Result<Released> {
    let retry = &shared.options.retry;
    let request_id = protocol::request_id();
    let latch_key = protocol::unlock_latch_key(&id.name, request_id.as_bytes());
    let same_slot = !connection.is_cluster() || key_slot(&latch_key) == key_slot(&id.name);
    let mut latched = same_slot && !shared.latch_refused.load(Ordering::Relaxed);
    let mut refused = false;
    let mut not_held = id.kind.answers_missing_as_released() && !shared.missing_refused.load(Ordering::Relaxed);
    let mut by_key = id.takes_latch_key() && !shared.latch_key_refused.load(Ordering::Relaxed);
    let lifetime = latch_lifetime(retry, shared.options.reply_timeout, lease_ms);
    let reply = loop {
        let latch = match by_key {
            true => Latch::Key(&latch_key),
            false => Latch::Request(request_id.as_bytes()),
        };
        let release = id.release(lease_ms, latched.then_some((latch, lifetime)), not_held);
        let send = || async {
            Ok(match latched {
                true => release.query_async::<Option<i64>>(&mut connection.clone()).await?,
                false => release.query_async(&mut connection.once(shared.options.cluster_reply_timeout)).await?,
            })
        };
        // Latched, a release is sent again: a repeat replies what it did.
        match retry.run(|err| latched && err.is_transient(), send).await {
            // A refusal that may be of the latch key: nothing ran, so the
            // release goes again without it.
            Err(Error::Redis(err))
                if latched
                    && err.code() == Some("NOPERM")
                    && err.detail().is_some_and(|detail| names_latch_key(detail, by_key)) =>
            {
                (latched, refused) = (false, true);
            }
            // A module older than `LATCH` refuses it while parsing, before
            // anything runs: sent again with the request id.
            Err(Error::Redis(err)) if latched && by_key && is_syntax_error(&err) => {
                shared.latch_key_refused.store(true, Ordering::Relaxed);
                by_key = false;
            }
            // A module older than `MISSING NOTHELD` refuses it while parsing,
            // before anything runs: sent again without it.
            Err(Error::Redis(err)) if not_held && is_syntax_error(&err) => {
                shared.missing_refused.store(true, Ordering::Relaxed);
                not_held = false;
            }
            reply => break reply?,
        }
    };
    // It was the latch's (the release without it ran): stop asking.
    if refused {
        shared.latch_refused.store(true, Ordering::Relaxed);
    }
    if latched {
        // Done with the latch: drop it now rather than let it linger.
        shared.latch_sweeper.delete(latch_key);
    }
    let released = match reply {
        Some(1) => Released::Fully,
        Some(0) => Released::OneLevel,
        None => Released::NotHeld,
        Some(other) => return Err(Error::UnexpectedReply(format!("release replied {other}"))),
    };
    let (name, owner) = id.traced();
    tracing::debug!(target: "rlock", lock = %name, owner = %owner, outcome = ?released, "released");
    Ok(released)
}

/// How long a release's unlock latch lives. A retry may sit queued behind
/// a stalled server and run late: the latch must outlive it, or the lock
/// first (the lease this release sets, or a renewal sent before the retry,
/// ends within this). Each attempt may wait for its reply the larger of
/// [`RESPONSE_BOUND`] and the configured `reply_timeout`.
fn latch_lifetime(retry: &RetryOptions, reply_timeout: Option<Duration>, lease_ms: i64) -> Duration {
    let response_bound = reply_timeout.map_or(RESPONSE_BOUND, |timeout| timeout.max(RESPONSE_BOUND));
    let window = retry.delay.saturating_add(response_bound).saturating_mul(retry.attempts.saturating_add(1));
    window.saturating_add(Duration::from_millis(lease_ms.max(0) as u64)).saturating_add(window)
}

/// Whether a NOPERM refusal may be about the unlock latch key: the
/// family's releases name the key; a declared latch key is refused by
/// Redis, which names no key, in words that differ by server (the lock's
/// own, refused too, fails the release that follows without the latch).
fn names_latch_key(detail: &str, declared: bool) -> bool {
    declared || detail.contains("'redisson_unlock_latch:")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latch_outlives_every_attempt_at_the_longer_of_1_s_and_the_reply_timeout_and_the_lease() {
        let retry = RetryOptions::new(3, Duration::from_millis(100));
        let s = Duration::from_secs;
        // (reply timeout, lease ms, lifetime): two windows of 4 attempts, and the lease.
        let cases = [
            (None, 0, Duration::from_millis(2 * 4 * 1100)),
            (Some(Duration::from_millis(500)), 0, Duration::from_millis(2 * 4 * 1100)),
            (Some(s(3)), 0, Duration::from_millis(2 * 4 * 3100)),
            (Some(s(3)), 30_000, Duration::from_millis(2 * 4 * 3100 + 30_000)),
            (None, -1, Duration::from_millis(2 * 4 * 1100)),
        ];
        for (reply_timeout, lease_ms, lifetime) in cases {
            assert_eq!(latch_lifetime(&retry, reply_timeout, lease_ms), lifetime, "{reply_timeout:?}, {lease_ms} ms");
        }
    }
}
