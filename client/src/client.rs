use crate::engine::kind::Kind;
use crate::engine::lock_state::Registry;
use crate::engine::watchdog::WatchdogStats;
use crate::error::Result;
use crate::listing::LockListing;
use crate::lock::Lock;
use crate::options::{check, ClientOptions};
use crate::rwlock::ReadWriteLock;
use crate::shared::Shared;
use crate::synchronizers::latch::CountDownLatch;
use crate::synchronizers::permits::PermitExpirableSemaphore;
use crate::synchronizers::semaphore::Semaphore;
use crate::transport::cluster::Seeds;
use crate::transport::connection::{Connection, Deployment};
use crate::transport::sentinel::Sentinels;
use redis::aio::ConnectionManager;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::watch;
use uuid::Uuid;

/// A connection to a Redis server with the rlock module, and the source of
/// handles: [`Lock`] of every [`Kind`], [`ReadWriteLock`], the synchronizers.
///
/// Cloning is cheap and shares everything: the connection, the pub/sub
/// connection, the watchdog and the client id. When the last clone is
/// dropped the watchdog stops, and locks still held are reported lost.
///
/// ```no_run
/// use rlock_client::{Client, ClientOptions};
/// use std::time::Duration;
///
/// # async fn example() -> rlock_client::Result<()> {
/// // Default options:
/// let client = Client::open("redis://127.0.0.1:6379/").await?;
/// // Or chosen ones, with a redis-rs client:
/// let options = ClientOptions::default().with_watchdog_timeout(Duration::from_secs(10));
/// let client = Client::connect(redis::Client::open("redis://127.0.0.1:6379/")?, options).await?;
///
/// let guard = client.lock("orders:42").lock().await?;
/// guard.unlock().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    shared: Arc<Shared>,
    _running: Arc<Running>,
}

impl Client {
    /// Connects to `url` (`redis://host:port/db`) with default options.
    pub async fn open(url: &str) -> Result<Self> {
        Self::connect(redis::Client::open(url)?, ClientOptions::default()).await
    }

    /// Connects with a redis-rs client and options.
    pub async fn connect(redis: redis::Client, options: ClientOptions) -> Result<Self> {
        check(&options)?;
        let deployment = Deployment::Single(redis);
        let connection = deployment.connect(options.reply_timeout).await?;
        Self::start(deployment, connection, options)
    }

    /// Connects to a Redis Cluster through any of its `nodes`
    /// (`redis://host:port`). Commands are routed by key slot; waiters
    /// subscribe to their lock's shard channel (SSUBSCRIBE); the watchdog
    /// sends one batch per primary.
    pub async fn connect_cluster<T: redis::IntoConnectionInfo>(
        nodes: impl IntoIterator<Item = T>,
        options: ClientOptions,
    ) -> Result<Self> {
        let nodes = nodes.into_iter().map(T::into_connection_info).collect::<redis::RedisResult<Vec<_>>>()?;
        check(&options)?;
        let deployment = Deployment::Cluster(Seeds::new(nodes));
        let connection = deployment.connect(options.reply_timeout).await?;
        Self::start(deployment, connection, options)
    }

    /// Connects to the primary the Sentinels at `sentinels`
    /// (`redis://host:port`) name for `primary_name`, and follows it to
    /// another after a failover: the client asks the Sentinels every
    /// second, and at once when a command fails as a failover makes it fail
    /// (the failed command's error comes back; the next call, a retry or
    /// the watchdog's renewal, goes to the new primary, where a hold it
    /// lacks is reported lost). The primary is the one a majority of the
    /// Sentinels name, once it answers as one. `node` holds the data
    /// nodes' database and credentials. Blocking waits are not offered:
    /// waiters wait on pub/sub, which moves with the commands.
    pub async fn connect_sentinel<T: redis::IntoConnectionInfo>(
        sentinels: impl IntoIterator<Item = T>,
        primary_name: &str,
        node: redis::RedisConnectionInfo,
        options: ClientOptions,
    ) -> Result<Self> {
        let sentinels = sentinels.into_iter().map(T::into_connection_info).collect::<redis::RedisResult<Vec<_>>>()?;
        check(&options)?;
        let deployment = Deployment::Sentinel(Sentinels::new(sentinels, primary_name, node)?);
        let connection = deployment.connect(options.reply_timeout).await?;
        Self::start(deployment, connection, options)
    }

    /// Uses an existing redis-rs connection for commands. `redis` opens the
    /// pub/sub connection when a lock first has to wait.
    ///
    /// Must be called within a Tokio runtime: it starts the watchdog task.
    pub fn with_connection(
        redis: redis::Client,
        connection: ConnectionManager,
        options: ClientOptions,
    ) -> Result<Self> {
        check(&options)?;
        Self::start(Deployment::Single(redis), Connection::Single(connection), options)
    }

    fn start(deployment: Deployment, connection: Connection, options: ClientOptions) -> Result<Self> {
        let (running, closed) = watch::channel(false);
        let shared = Shared::start(deployment, connection, options, closed);
        let running = Running { closed: running, registry: shared.registry.clone() };
        Ok(Self { shared: Arc::new(shared), _running: Arc::new(running) })
    }

    /// What the watchdog has done so far: rounds, failures, locks lost.
    pub fn watchdog_stats(&self) -> WatchdogStats {
        self.shared.watchdog.stats()
    }

    /// The locks on the server whose names match `pattern` (`SCAN`'s
    /// glob; `None`: all), walked page by page with `RLOCK.LIST`: one
    /// server, the Sentinels' primary, or every primary of a cluster in
    /// turn.
    pub fn list_locks(&self, pattern: Option<&str>) -> LockListing {
        LockListing::new(self.shared.clone(), pattern)
    }

    /// This client's id: the first part of its owner ids.
    pub fn id(&self) -> Uuid {
        self.shared.id
    }

    /// A new handle on the lock `name` (Redisson's `getLock`), with its
    /// own owner id `<client id>:<n>`. Reentrant through this handle (and
    /// its clones).
    pub fn lock(&self, name: impl AsRef<[u8]>) -> Lock {
        self.new_owner().lock(name)
    }

    /// A new handle on the fair lock `name` (Redisson's `getFairLock`),
    /// with its own owner id.
    pub fn fair_lock(&self, name: impl AsRef<[u8]>) -> Lock {
        self.new_owner().fair_lock(name)
    }

    /// A new handle on the fenced lock `name` (Redisson's `getFencedLock`),
    /// with its own owner id.
    pub fn fenced_lock(&self, name: impl AsRef<[u8]>) -> Lock {
        self.new_owner().fenced_lock(name)
    }

    /// A new handle on the read-write lock `name` (Redisson's
    /// `getReadWriteLock`), with its own owner id for both sides.
    pub fn read_write_lock(&self, name: impl AsRef<[u8]>) -> ReadWriteLock {
        self.new_owner().read_write_lock(name)
    }

    /// The handles of an explicit owner id: two handles with the same
    /// owner are the same holder (for hand-off between tasks, or to act for
    /// a Redisson thread `<uuid>:<thread id>`: see
    /// [`ClientOptions::with_shared_owner_ids`]).
    ///
    /// ```no_run
    /// # async fn example(client: rlock_client::Client) -> rlock_client::Result<()> {
    /// let task = client.owned_by("worker-7");
    /// let guard = task.lock("orders:42").lock().await?;
    /// // Another handle of the same owner: a re-entry, not a wait.
    /// let again = task.lock("orders:42").lock().await?;
    /// again.unlock().await?;
    /// guard.unlock().await?;
    /// # Ok(()) }
    /// ```
    pub fn owned_by(&self, owner: impl AsRef<[u8]>) -> Owner {
        Owner { shared: self.shared.clone(), id: owner.as_ref().into(), minted: false }
    }

    /// A new owner id, `<client id>:<n>`, made for the handles taken from it.
    fn new_owner(&self) -> Owner {
        let n = self.shared.next_owner.fetch_add(1, Ordering::Relaxed);
        Owner { shared: self.shared.clone(), id: format!("{}:{n}", self.shared.id).into_bytes().into(), minted: true }
    }

    /// The semaphore `name` (Redisson's `getSemaphore`).
    pub fn semaphore(&self, name: impl AsRef<[u8]>) -> Semaphore {
        Semaphore::new(self.shared.clone(), name.as_ref())
    }

    /// The permit-expirable semaphore `name` (Redisson's
    /// `getPermitExpirableSemaphore`).
    pub fn permit_semaphore(&self, name: impl AsRef<[u8]>) -> PermitExpirableSemaphore {
        PermitExpirableSemaphore::new(self.shared.clone(), name.as_ref())
    }

    /// The count-down latch `name` (Redisson's `getCountDownLatch`).
    pub fn count_down_latch(&self, name: impl AsRef<[u8]>) -> CountDownLatch {
        CountDownLatch::new(self.shared.clone(), name.as_ref())
    }
}

/// One owner id of a client, the source of its lock handles: from
/// [`Client::owned_by`].
#[derive(Clone)]
pub struct Owner {
    shared: Arc<Shared>,
    id: Arc<[u8]>,
    /// The id was made by this client for these handles (no level of it on
    /// the server yet).
    minted: bool,
}

impl std::fmt::Debug for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Owner").field(&String::from_utf8_lossy(&self.id)).finish()
    }
}

impl Owner {
    /// A handle on the lock `name` (Redisson's `RLock`).
    pub fn lock(&self, name: impl AsRef<[u8]>) -> Lock {
        self.handle(name.as_ref(), Kind::Plain)
    }

    /// A handle on the fair lock `name`.
    pub fn fair_lock(&self, name: impl AsRef<[u8]>) -> Lock {
        self.handle(name.as_ref(), Kind::Fair)
    }

    /// A handle on the fenced lock `name`.
    pub fn fenced_lock(&self, name: impl AsRef<[u8]>) -> Lock {
        self.handle(name.as_ref(), Kind::Fenced)
    }

    /// A handle on the read-write lock `name` (this id is the base id
    /// `<uuid>:<thread id>`: the write side adds `:write`).
    pub fn read_write_lock(&self, name: impl AsRef<[u8]>) -> ReadWriteLock {
        ReadWriteLock::new(self.shared.clone(), name.as_ref(), (&self.id, self.minted))
    }

    fn handle(&self, name: &[u8], kind: Kind) -> Lock {
        Lock::new(self.shared.clone(), name, (&self.id, self.minted), kind)
    }
}

/// Dropped with the last [`Client`]: stops the background tasks, and the
/// registry at once (its holds lost, no more inline work), not when the
/// watchdog's task next runs: until then a guard looked held, and its
/// unlock still released.
struct Running {
    closed: watch::Sender<bool>,
    registry: Arc<Registry>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.closed.send_replace(true);
        self.registry.stop();
    }
}
