//! Redisson's `RPermitExpirableSemaphore` over the module's `RPSEM.*`
//! commands: permits with ids and leases, shared with Java clients.

mod keeper;
mod permit;

pub use permit::Permit;

use crate::engine::channel_wait::{wait_for, Channel, Tried, FALLBACK_PERIOD};
use crate::engine::protocol;
use crate::engine::requests::{command, query, read};
use crate::engine::run_to_end::run_to_end;
use crate::error::{Error, Result};
use crate::shared::Shared;
use crate::transport::wakeups::WakeRule;
use redis::Value;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How a permit is held.
///
/// ```
/// use rlock_client::PermitOptions;
/// use std::time::Duration;
///
/// let renewed = PermitOptions::renewed(Duration::from_secs(30));
/// assert!(renewed.renew);
/// assert!(!PermitOptions::leased(Duration::from_secs(30)).renew);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct PermitOptions {
    /// The permit's lease: it returns to the semaphore when it runs out.
    pub lease: Duration,
    /// Whether this client renews the lease (every third of it) while the
    /// permit is held: a holder that crashes gives its permit back one
    /// lease later, one that lives keeps it as long as it likes.
    pub renew: bool,
}

impl PermitOptions {
    /// A permit for `lease`, not renewed.
    pub fn leased(lease: Duration) -> Self {
        Self { lease, renew: false }
    }

    /// A permit whose `lease` this client renews while it is held.
    pub fn renewed(lease: Duration) -> Self {
        Self { lease, renew: true }
    }
}

/// A semaphore whose permits have ids and leases. Get it from
/// [`Client::permit_semaphore`](crate::Client::permit_semaphore); cloning
/// is cheap.
///
/// Unlike [`Semaphore`](crate::Semaphore)'s, a permit belongs to its
/// holder ([`Permit`]) and comes back when its lease runs out, so a
/// crashed holder cannot keep it for ever. Leases run on the server's
/// clock (Redisson uses each client's).
///
/// ```no_run
/// use rlock_client::PermitOptions;
/// use std::time::Duration;
///
/// # async fn example(client: rlock_client::Client) -> rlock_client::Result<()> {
/// let workers = client.permit_semaphore("render:workers");
/// workers.try_set_permits(4).await?;
/// // Back to the semaphore 30 s after a crash; renewed while this process lives.
/// let permit = workers.acquire_with(PermitOptions::renewed(Duration::from_secs(30))).await?;
/// println!("holding permit {}", permit.id_hex());
/// permit.release().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct PermitExpirableSemaphore {
    pub(crate) shared: Arc<Shared>,
    pub(crate) name: Arc<[u8]>,
}

impl std::fmt::Debug for PermitExpirableSemaphore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermitExpirableSemaphore").field("name", &String::from_utf8_lossy(&self.name)).finish()
    }
}

/// One try's reply: taken, or the earliest lease end of a taken permit
/// (server time, unix ms; `None`: none ends).
enum Taken {
    Yes,
    No { first_expiry_ms: Option<i64> },
}

impl PermitExpirableSemaphore {
    pub(crate) fn new(shared: Arc<Shared>, name: &[u8]) -> Self {
        Self { shared, name: name.into() }
    }

    /// The semaphore's name: its Redis key.
    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// Takes a permit for `lease`, waiting as long as it takes.
    pub async fn acquire(&self, lease: Duration) -> Result<Permit> {
        self.acquire_with(PermitOptions::leased(lease)).await
    }

    /// Takes a permit held as `options` say, waiting as long as it takes.
    pub async fn acquire_with(&self, options: PermitOptions) -> Result<Permit> {
        loop {
            if let Some(permit) = self.wait(options, None).await? {
                return Ok(permit);
            }
        }
    }

    /// Takes a permit for `lease` if one is free within `wait`.
    pub async fn try_acquire(&self, lease: Duration, wait: Duration) -> Result<Option<Permit>> {
        self.wait(PermitOptions::leased(lease), Some(wait)).await
    }

    async fn wait(&self, options: PermitOptions, limit: Option<Duration>) -> Result<Option<Permit>> {
        let lease_ms = protocol::lease_ms(options.lease)?;
        let channel = rlock_protocol::semaphore_channel(&self.name);
        let channel = Channel { key: &self.name, name: &channel, rule: WakeRule::EveryMessage };
        wait_for(&self.shared, channel, limit, || async {
            let (id, requested_at) = (*uuid::Uuid::new_v4().as_bytes(), tokio::time::Instant::now());
            Ok(match self.take(id, lease_ms).await? {
                Taken::Yes => Tried::Done(Permit::new(self.clone(), id, options, requested_at)),
                Taken::No { first_expiry_ms } => Tried::Again(pause_until(first_expiry_ms)),
            })
        })
        .await
    }

    /// One `RPSEM.TRYACQUIRE`, run to its end: a caller cancelled
    /// while it runs leaves no permit taken (a grant nobody receives is
    /// released). A lost reply is settled by asking for the permit's lease.
    async fn take(&self, id: [u8; 16], lease_ms: i64) -> Result<Taken> {
        let semaphore = self.clone();
        run_to_end(&self.shared, move |reply_tx| async move {
            let try_acquire = command("RPSEM.TRYACQUIRE", &semaphore.name).arg(lease_ms).arg(&id).clone();
            let taken = match query::<Value>(&semaphore.shared, &semaphore.name, &try_acquire).await {
                Ok(reply) => parse_try_acquire(reply),
                Err(err) if err.is_transient() => match semaphore.lease_left(&id).await {
                    Ok(0) => Err(err), // not taken: safe to try again
                    Ok(_) => Ok(Taken::Yes),
                    Err(_) => Err(Error::OutcomeUnknown(Box::new(err))),
                },
                Err(err) => Err(err),
            };
            if let Err(Ok(Taken::Yes)) = reply_tx.send(taken) {
                let _ = semaphore.release_id(&id).await;
            }
        })
        .await
        .unwrap_or(Err(Error::ClientClosed))
    }

    /// `RPSEM.LEASE`: ms left on a held permit, -1 never expires, 0 not held.
    pub(crate) async fn lease_left(&self, id: &[u8]) -> Result<i64> {
        read(&self.shared, &self.name, command("RPSEM.LEASE", &self.name).arg(id)).await
    }

    /// `RPSEM.RELEASE` of one id: 1 returned, 0 not held, -1 lapsed.
    pub(crate) async fn release_id(&self, id: &[u8]) -> Result<i64> {
        query(&self.shared, &self.name, command("RPSEM.RELEASE", &self.name).arg(id)).await
    }

    /// The permits free now (expired leases reclaimed first).
    pub async fn available(&self) -> Result<i64> {
        self.count("RPSEM.AVAILABLE").await
    }

    /// The permits held now (expired leases reclaimed first).
    pub async fn acquired(&self) -> Result<i64> {
        self.count("RPSEM.ACQUIRED").await
    }

    async fn count(&self, verb: &str) -> Result<i64> {
        read(&self.shared, &self.name, &command(verb, &self.name)).await
    }

    /// Sets the permits of a semaphore that does not exist yet; false (and
    /// nothing changes) when it exists.
    pub async fn try_set_permits(&self, permits: u32) -> Result<bool> {
        let set: i64 = query(&self.shared, &self.name, command("RPSEM.TRYSETPERMITS", &self.name).arg(permits)).await?;
        Ok(set == 1)
    }

    /// Makes the permits in all (free plus held) `permits`.
    pub async fn set_permits(&self, permits: u32) -> Result<()> {
        query(&self.shared, &self.name, command("RPSEM.SETPERMITS", &self.name).arg(permits)).await
    }

    /// Adds `delta` free permits (negative: removes them).
    pub async fn add_permits(&self, delta: i64) -> Result<()> {
        query(&self.shared, &self.name, command("RPSEM.ADDPERMITS", &self.name).arg(delta)).await
    }
}

fn parse_try_acquire(reply: Value) -> Result<Taken> {
    let text = match &reply {
        Value::Nil => return Ok(Taken::No { first_expiry_ms: None }),
        Value::Okay => return Ok(Taken::Yes),
        Value::BulkString(bytes) => std::str::from_utf8(bytes).ok(),
        Value::SimpleString(text) => Some(text.as_str()),
        _ => None,
    };
    match text {
        Some("OK") => Ok(Taken::Yes),
        Some(text) => match text.strip_prefix(':').map(str::parse) {
            Some(Ok(first_expiry_ms)) => Ok(Taken::No { first_expiry_ms: Some(first_expiry_ms) }),
            _ => Err(Error::UnexpectedReply(format!("RPSEM.TRYACQUIRE replied {reply:?}"))),
        },
        None => Err(Error::UnexpectedReply(format!("RPSEM.TRYACQUIRE replied {reply:?}"))),
    }
}

/// How long to wait for the earliest lease end (server time), by this
/// machine's clock: at most the fallback period, so that clock skew
/// costs a short wait at worst.
fn pause_until(first_expiry_ms: Option<i64>) -> Duration {
    let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |now| now.as_millis() as i64);
    first_expiry_ms
        .map_or(FALLBACK_PERIOD, |at| Duration::from_millis((at - now_ms).clamp(1, i64::MAX) as u64))
        .min(FALLBACK_PERIOD)
}

#[cfg(test)]
mod tests {
    use super::*;
    use redis::Value::{BulkString, Int, Nil, Okay, SimpleString};

    #[test]
    fn try_acquire_replies() {
        let cases = [
            (BulkString(b"OK".to_vec()), Some(None)),
            (Okay, Some(None)),
            (SimpleString("OK".into()), Some(None)),
            (Nil, Some(Some(None))),
            (BulkString(b":1700000000123".to_vec()), Some(Some(Some(1_700_000_000_123)))),
            (BulkString(b":soon".to_vec()), None),
            (BulkString(b"1700000000123".to_vec()), None),
            (Int(1), None),
        ];
        for (reply, expected) in cases {
            let parsed = parse_try_acquire(reply.clone()).ok().map(|taken| match taken {
                Taken::Yes => None,
                Taken::No { first_expiry_ms } => Some(first_expiry_ms),
            });
            assert_eq!(parsed, expected, "{reply:?}");
        }
    }

    #[test]
    fn the_pause_to_a_lease_end_is_at_least_1_ms_and_at_most_the_fallback() {
        let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
        assert_eq!(pause_until(None), FALLBACK_PERIOD);
        assert_eq!(pause_until(Some(now_ms - 5_000)), Duration::from_millis(1));
        assert_eq!(pause_until(Some(now_ms + 60_000)), FALLBACK_PERIOD);
        let soon = pause_until(Some(now_ms + 300));
        assert!(soon > Duration::from_millis(200) && soon <= Duration::from_millis(300), "{soon:?}");
    }
}
