use crate::engine::handle::Handle;
use crate::engine::holds::Renewal;
use crate::engine::kind::Kind;
use crate::error::Result;
use crate::guard::Guard;
use crate::info::LockInfo;
use crate::shared::Shared;
use std::sync::Arc;
use std::time::Duration;

/// A handle on one lock of one [`Kind`], with one owner id. Get it from
/// [`Client::lock`](crate::Client::lock) (Redisson's `RLock`),
/// [`Client::fair_lock`](crate::Client::fair_lock),
/// [`Client::fenced_lock`](crate::Client::fenced_lock), or the sides of
/// [`Client::read_write_lock`](crate::Client::read_write_lock). Every kind
/// has the same methods and guarantees; only the waiting differs (and a
/// fenced lock's guard carries a token).
///
/// The lock is reentrant through the handle, its clones and every other
/// handle of this client with the same owner and kind: each successful
/// `lock*` call adds a hold, each [`Guard::unlock`] removes one. Acquires
/// and releases on one lock, owner and kind are sent one at a time, so the
/// hold count this client keeps follows the server's.
///
/// ```no_run
/// use std::time::Duration;
///
/// # async fn example(client: rlock_client::Client) -> rlock_client::Result<()> {
/// let lock = client.lock("orders:42");
/// let outer = lock.lock().await?; // the watchdog renews it
/// let inner = lock.lock().await?; // a re-entry: a second hold
/// assert_eq!(lock.hold_count().await?, 2);
/// inner.unlock().await?;
/// outer.unlock().await?;
///
/// // At most half a second's wait, a 10 s lease and no watchdog:
/// match lock.try_lock(Duration::from_millis(500), Some(Duration::from_secs(10))).await? {
///     Some(guard) => guard.unlock().await?,
///     None => println!("someone else holds it"),
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Lock {
    handle: Handle,
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lock")
            .field("kind", &self.kind())
            .field("name", &String::from_utf8_lossy(self.name()))
            .field("owner", &String::from_utf8_lossy(self.owner()))
            .finish()
    }
}

impl Lock {
    /// `minted`: the owner id was made for this handle just now (no level
    /// of it on the server yet).
    pub(crate) fn new(shared: Arc<Shared>, name: &[u8], (owner, minted): (&[u8], bool), kind: Kind) -> Self {
        Self { handle: Handle::new(shared, name, (owner, minted), kind) }
    }

    /// Which kind of lock this is: its commands and waiting rules.
    pub fn kind(&self) -> Kind {
        self.handle.id().kind
    }

    /// The lock's name: its Redis key.
    pub fn name(&self) -> &[u8] {
        &self.handle.id().name
    }

    /// This handle's owner id: the hash field it holds the lock under (a
    /// write hold's field is this with `:write` appended).
    pub fn owner(&self) -> &[u8] {
        &self.handle.id().owner
    }

    /// Which server the lock is on (its client's address, cluster or
    /// Sentinel group): with the name, which lock this is.
    pub(crate) fn server(&self) -> String {
        self.handle.shared().server_label()
    }

    /// The lease of a watchdog hold: the client's watchdog timeout.
    pub fn watchdog_timeout(&self) -> Duration {
        self.handle.shared().options.watchdog_timeout
    }

    /// Waits, without limit, until the lock is ours. The lease is the
    /// watchdog timeout, renewed until the guard is unlocked or dropped.
    pub async fn lock(&self) -> Result<Guard> {
        self.acquire(Renewal::Watchdog, None, None).await
    }

    /// Waits, without limit, until the lock is ours for `lease`. No
    /// watchdog: the hold ends with its lease.
    pub async fn lock_with_lease(&self, lease: Duration) -> Result<Guard> {
        self.acquire(Renewal::Fixed, Some(lease), None).await
    }

    /// Tries for at most `wait`; `None` when the lock stayed taken. With a
    /// `lease` the hold ends with it; without, the watchdog renews it. A
    /// fair lock tried with a zero `wait` is not queued (Redisson's
    /// `tryLock()`); with a longer one its place in the queue lasts `wait`
    /// once its turn may have come (Redisson's `tryLock(wait, ..)`).
    pub async fn try_lock(&self, wait: Duration, lease: Option<Duration>) -> Result<Option<Guard>> {
        let renewal = if lease.is_some() { Renewal::Fixed } else { Renewal::Watchdog };
        let hold = self.handle.acquire(renewal, lease, Some(wait)).await?;
        Ok(hold.map(|hold| Guard::new(self.clone(), hold)))
    }

    async fn acquire(&self, renewal: Renewal, lease: Option<Duration>, limit: Option<Duration>) -> Result<Guard> {
        loop {
            if let Some(hold) = self.handle.acquire(renewal, lease, limit).await? {
                return Ok(Guard::new(self.clone(), hold));
            }
        }
    }

    /// Deletes the lock whoever holds it (Redisson's `forceUnlock`; on a
    /// read-write lock, of this side: only when it is held this way).
    /// True when there was a lock. Sent once: when its reply is lost, the
    /// error is returned rather than a second force release that could
    /// delete a holder who took the lock in between.
    pub async fn force_unlock(&self) -> Result<bool> {
        self.handle.force_release().await
    }

    /// Whether anyone holds the lock (on a read-write lock: this way).
    pub async fn is_locked(&self) -> Result<bool> {
        Ok(self.handle.status().await?.locked)
    }

    /// Whether this handle's owner holds the lock (this way).
    pub async fn is_held(&self) -> Result<bool> {
        Ok(self.handle.status().await?.hold_count > 0)
    }

    /// How many times this handle's owner holds the lock (0: not at all).
    pub async fn hold_count(&self) -> Result<u64> {
        Ok(self.handle.status().await?.hold_count.max(0) as u64)
    }

    /// What the server holds for the lock: its kind, every holder with its
    /// holds and lease, and the callers blocked on it on the server
    /// (`RLOCK.INSPECT`; whichever side of a read-write lock this is).
    pub async fn info(&self) -> Result<LockInfo> {
        LockInfo::parse(self.handle.inspect().await?)
    }

    /// The lease left on the lock, whoever holds it; `None` when nobody
    /// does, `Duration::MAX` for a lock key without expiry.
    pub async fn remaining_lease(&self) -> Result<Option<Duration>> {
        let status = self.handle.status().await?;
        Ok(match status.ttl_ms {
            _ if !status.locked => None,
            -1 => Some(Duration::MAX),
            ms => Some(Duration::from_millis(ms.max(0) as u64)),
        })
    }
}
