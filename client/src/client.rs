use crate::blocking::BlockingPool;
use crate::connection::{Connection, Deployment};
use crate::error::{Error, Result};
use crate::latch::CountDownLatch;
use crate::latch_sweeper::LatchSweeper;
use crate::lock::{FairLock, FencedLock, Lock};
use crate::lock_state::Registry;
use crate::permits::PermitExpirableSemaphore;
use crate::protocol;
use crate::replica_sync::{Plan, ReplicaSync, ReplicaSyncState};
use crate::rwlock::ReadWriteLock;
use crate::semaphore::Semaphore;
use crate::subscriptions::Subscriptions;
use crate::watchdog::{Watchdog, WatchdogStats};
use redis::aio::ConnectionManager;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{watch, OnceCell};
use uuid::Uuid;

/// Client settings. Start from [`ClientOptions::default`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClientOptions {
    /// The lease of locks taken without an explicit one, renewed every
    /// third of it while held (Redisson's `lockWatchdogTimeout`). Default 30 s.
    pub watchdog_timeout: Duration,
    /// How transient failures (connection loss, failover) are retried.
    pub retry: RetryOptions,
    /// Whether acquires wait for replicas. Default: all connected ones, 1 s.
    pub replica_sync: ReplicaSync,
    /// How long a fair lock waiter without a wait limit keeps its place in
    /// the queue once its turn may have come (Redisson's
    /// `fairLockWaitTimeout`): a waiter that died leaves it then. Default
    /// 5 minutes.
    pub fair_wait_timeout: Duration,
    /// Connections for the blocking waiting mode: a refused waiter of a
    /// plain lock blocks on the server (`RLOCK.ACQUIRE … WAIT`) on one of
    /// these, opened when first needed, and is granted the lock in arrival
    /// order the moment it frees. Default 8. Waiters beyond this many, and
    /// on a cluster, with replica sync, or against a module without `WAIT`,
    /// wait by pub/sub; 0 makes every waiter wait by pub/sub, as Redisson's.
    pub blocking_connections: usize,
    /// Whether owner ids given to the `*_with_owner` handles may be used by
    /// other clients at the same time (a Redisson thread's
    /// `<uuid>:<thread id>`, another rlock client). Default false: an owner
    /// id is this client's alone, so every level the server counts for it
    /// beyond this client's holds is one it gave up (a lease that ran out
    /// on its clock, a release whose reply was lost), and the next acquire
    /// gives it back. When true, the client never releases a level it did
    /// not take: such levels keep the lock until their lease ends. Owner
    /// ids this client makes (`<client id>:<n>`) are always its alone.
    pub shared_owner_ids: bool,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            watchdog_timeout: Duration::from_secs(30),
            retry: RetryOptions::default(),
            replica_sync: ReplicaSync::default(),
            fair_wait_timeout: Duration::from_secs(300),
            blocking_connections: 8,
            shared_owner_ids: false,
        }
    }
}

impl ClientOptions {
    /// Sets [`ClientOptions::watchdog_timeout`].
    pub fn with_watchdog_timeout(mut self, timeout: Duration) -> Self {
        self.watchdog_timeout = timeout;
        self
    }

    /// Sets [`ClientOptions::replica_sync`].
    pub fn with_replica_sync(mut self, replica_sync: ReplicaSync) -> Self {
        self.replica_sync = replica_sync;
        self
    }

    /// Sets [`ClientOptions::fair_wait_timeout`].
    pub fn with_fair_wait_timeout(mut self, timeout: Duration) -> Self {
        self.fair_wait_timeout = timeout;
        self
    }

    /// Sets [`ClientOptions::blocking_connections`].
    pub fn with_blocking_connections(mut self, connections: usize) -> Self {
        self.blocking_connections = connections;
        self
    }

    /// Sets [`ClientOptions::shared_owner_ids`].
    pub fn with_shared_owner_ids(mut self, shared: bool) -> Self {
        self.shared_owner_ids = shared;
        self
    }

    /// Sets [`ClientOptions::retry`].
    pub fn with_retry(mut self, retry: RetryOptions) -> Self {
        self.retry = retry;
        self
    }
}

/// Retries of transient failures.
///
/// Reads are retried `attempts` times, `delay` apart. An acquire whose
/// reply was lost is never sent again blindly: it is sent again under its
/// request id, and the server replays its grant or runs it now (a fair
/// lock's, which has no id, reads the owner's hold count first). Releases carry a request id (Redisson's
/// unlock latch), so a retried release answers as the first one did and
/// never drops a second level. A force release is sent again only when
/// the connection was refused. The watchdog retries every `delay` until
/// the lease would be gone, then reports the lock lost.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RetryOptions {
    /// Retries after the first failure. Default 3.
    pub attempts: u32,
    /// Pause before each retry. Default 100 ms.
    pub delay: Duration,
}

impl Default for RetryOptions {
    fn default() -> Self {
        Self { attempts: 3, delay: Duration::from_millis(100) }
    }
}

impl RetryOptions {
    /// `attempts` retries, `delay` apart.
    pub fn new(attempts: u32, delay: Duration) -> Self {
        Self { attempts, delay }
    }
}

/// A connection to a Redis server with the rlock module, and the source of
/// lock handles: [`Lock`], [`FairLock`], [`ReadWriteLock`].
///
/// Cloning is cheap and shares everything: the connection, the pub/sub
/// connection, the watchdog and the client id. When the last clone is
/// dropped the watchdog stops, and locks still held are reported lost.
#[derive(Clone)]
pub struct Client {
    shared: Arc<Shared>,
    _running: Arc<Running>,
}

/// What locks and guards use; it outlives [`Client`] handles.
pub(crate) struct Shared {
    pub id: Uuid,
    pub connection: Connection,
    deployment: Deployment,
    pub options: ClientOptions,
    next_owner: AtomicU64,
    pub registry: Arc<Registry>,
    /// Set when the server refused an unlock latch key (ACL): releases go
    /// without one from then on.
    pub latch_refused: AtomicBool,
    /// Set when the server refused an acquire record key (ACL): acquires
    /// go without a request id from then on.
    pub record_refused: AtomicBool,
    pub latch_sweeper: Arc<LatchSweeper>,
    watchdog: Watchdog,
    /// Where background work (acquire attempts, releases) runs, also when
    /// a guard is dropped outside the runtime.
    pub runtime: tokio::runtime::Handle,
    subscriptions: OnceCell<Subscriptions>,
    /// The blocking waiting mode's connections, when enabled.
    pub blocking: Option<BlockingPool>,
    replica_sync: ReplicaSyncState,
    closed: watch::Receiver<bool>,
}

/// Dropped with the last [`Client`]: stops the background tasks.
struct Running(watch::Sender<bool>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.send_replace(true);
    }
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
        let connection = deployment.connect(None).await?;
        Self::start(deployment, connection, options)
    }

    /// Connects to a Redis Cluster through any of its `nodes`
    /// (`redis://host:port`). Commands are routed by key slot; waiters
    /// subscribe to their lock's shard channel (SSUBSCRIBE); the watchdog
    /// sends one pipeline per primary.
    pub async fn connect_cluster<T: redis::IntoConnectionInfo>(
        nodes: impl IntoIterator<Item = T>,
        options: ClientOptions,
    ) -> Result<Self> {
        let nodes = nodes.into_iter().map(T::into_connection_info).collect::<redis::RedisResult<Vec<_>>>()?;
        check(&options)?;
        let deployment = Deployment::Cluster(nodes);
        let connection = deployment.connect(None).await?;
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
        let registry = Arc::new(Registry::default());
        let watchdog = Watchdog::start(
            registry.clone(),
            connection.clone(),
            options.watchdog_timeout,
            options.retry.delay,
            closed.clone(),
        );
        let blocking = match &deployment {
            Deployment::Single(redis) if options.blocking_connections > 0 => {
                Some(BlockingPool::new(redis.clone(), options.blocking_connections))
            }
            _ => None,
        };
        let latch_sweeper = LatchSweeper::start(connection.clone(), closed.clone());
        let shared = Shared {
            id: Uuid::new_v4(),
            connection,
            deployment,
            replica_sync: ReplicaSyncState::new(options.replica_sync),
            options,
            next_owner: AtomicU64::new(1),
            registry,
            latch_refused: AtomicBool::new(false),
            record_refused: AtomicBool::new(false),
            latch_sweeper,
            watchdog,
            runtime: tokio::runtime::Handle::current(),
            subscriptions: OnceCell::new(),
            blocking,
            closed,
        };
        Ok(Self { shared: Arc::new(shared), _running: Arc::new(Running(running)) })
    }

    /// What the watchdog has done so far: rounds, failures, locks lost.
    pub fn watchdog_stats(&self) -> WatchdogStats {
        self.shared.watchdog.stats()
    }

    /// This client's id: the first part of its owner ids.
    pub fn id(&self) -> Uuid {
        self.shared.id
    }

    /// A new handle on the lock `name`, with its own owner id
    /// `<client id>:<n>`. Reentrant through this handle (and its clones).
    pub fn lock(&self, name: impl AsRef<[u8]>) -> Lock {
        self.lock_with_owner(name, self.next_owner())
    }

    /// A handle on the lock `name` with an explicit owner id: two handles
    /// with the same owner are the same holder (for hand-off between tasks,
    /// or to act for a Redisson thread `<uuid>:<thread id>`).
    pub fn lock_with_owner(&self, name: impl AsRef<[u8]>, owner: impl AsRef<[u8]>) -> Lock {
        Lock::new(self.shared.clone(), name.as_ref(), owner.as_ref())
    }

    /// A new handle on the fair lock `name` (Redisson's `getFairLock`),
    /// with its own owner id.
    pub fn fair_lock(&self, name: impl AsRef<[u8]>) -> FairLock {
        self.fair_lock_with_owner(name, self.next_owner())
    }

    /// A handle on the fair lock `name` with an explicit owner id.
    pub fn fair_lock_with_owner(&self, name: impl AsRef<[u8]>, owner: impl AsRef<[u8]>) -> FairLock {
        FairLock::new(self.shared.clone(), name.as_ref(), owner.as_ref())
    }

    /// A new handle on the fenced lock `name` (Redisson's `getFencedLock`),
    /// with its own owner id.
    pub fn fenced_lock(&self, name: impl AsRef<[u8]>) -> FencedLock {
        self.fenced_lock_with_owner(name, self.next_owner())
    }

    /// A handle on the fenced lock `name` with an explicit owner id.
    pub fn fenced_lock_with_owner(&self, name: impl AsRef<[u8]>, owner: impl AsRef<[u8]>) -> FencedLock {
        FencedLock::new(self.shared.clone(), name.as_ref(), owner.as_ref())
    }

    /// A new handle on the read-write lock `name` (Redisson's
    /// `getReadWriteLock`), with its own owner id for both sides.
    pub fn read_write_lock(&self, name: impl AsRef<[u8]>) -> ReadWriteLock {
        self.read_write_lock_with_owner(name, self.next_owner())
    }

    /// A handle on the read-write lock `name` with an explicit owner id
    /// (the base id `<uuid>:<thread id>`: the write side adds `:write`).
    pub fn read_write_lock_with_owner(&self, name: impl AsRef<[u8]>, owner: impl AsRef<[u8]>) -> ReadWriteLock {
        ReadWriteLock::new(self.shared.clone(), name.as_ref(), owner.as_ref())
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

    /// A new owner id, `<client id>:<n>`.
    fn next_owner(&self) -> String {
        let n = self.shared.next_owner.fetch_add(1, Ordering::Relaxed);
        format!("{}:{n}", self.shared.id)
    }
}

/// Shortest watchdog timeout: its third, the renewal period, is 1 ms.
const MIN_WATCHDOG_TIMEOUT: Duration = Duration::from_millis(3);

/// Refuses options the client cannot work with, before connecting.
fn check(options: &ClientOptions) -> Result<()> {
    let watchdog = options.watchdog_timeout;
    if watchdog < MIN_WATCHDOG_TIMEOUT || protocol::lease_ms(watchdog).is_err() {
        return Err(Error::InvalidWatchdogTimeout(watchdog));
    }
    // Sent as RFAIR.ACQUIRE's WAIT, whose bounds are a lease's.
    if protocol::lease_ms(options.fair_wait_timeout).is_err() {
        return Err(Error::InvalidFairWaitTimeout(options.fair_wait_timeout));
    }
    match options.replica_sync {
        // WAIT takes whole milliseconds, and 0 blocks for ever.
        ReplicaSync::AllReplicas { timeout } | ReplicaSync::Replicas { timeout, .. }
            if timeout < Duration::from_millis(1) =>
        {
            Err(Error::InvalidReplicaSyncTimeout(timeout))
        }
        _ => Ok(()),
    }
}

impl Shared {
    pub fn is_closed(&self) -> bool {
        *self.closed.borrow()
    }

    /// Turns true when the last [`Client`] handle is dropped.
    pub fn closed(&self) -> watch::Receiver<bool> {
        self.closed.clone()
    }

    /// What the next acquire must do to sync replicas (`None`: nothing).
    pub async fn replica_sync_plan(&self, key: &[u8]) -> Result<Option<Plan>> {
        self.replica_sync.plan(&self.deployment, &self.connection, key).await
    }

    /// The pub/sub connection, opened on first use.
    pub async fn subscriptions(&self) -> Result<&Subscriptions> {
        Ok(self.subscriptions.get_or_try_init(|| Subscriptions::connect(&self.deployment, self.closed.clone())).await?)
    }
}
