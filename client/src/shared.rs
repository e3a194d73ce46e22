//! What every handle, guard and background task of one client shares: the
//! connection, the options, the registry of holds, the watchdog, the
//! pub/sub connection and the blocking pool. Nothing here knows the lock
//! engine, so every part of it may depend on this.

use crate::engine::lock_state::Registry;
use crate::engine::watchdog::Watchdog;
use crate::error::Result;
use crate::options::ClientOptions;
use crate::transport::blocking_pool::BlockingPool;
use crate::transport::connection::{Connection, Deployment};
use crate::transport::latch_sweeper::LatchSweeper;
use crate::transport::replica_sync::{Plan, ReplicaSyncState};
use crate::transport::subscriptions::Subscriptions;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use tokio::sync::{watch, OnceCell};
use uuid::Uuid;

/// What locks and guards use; it outlives [`Client`](crate::Client) handles.
pub(crate) struct Shared {
    pub id: Uuid,
    pub connection: Connection,
    deployment: Deployment,
    pub options: ClientOptions,
    pub next_owner: AtomicU64,
    pub registry: Arc<Registry>,
    /// Set when the server refused an unlock latch key (ACL): releases go
    /// without one from then on.
    pub latch_refused: AtomicBool,
    /// Set when the server refused an acquire record key (ACL): acquires
    /// go without a request id from then on.
    pub record_refused: AtomicBool,
    /// The module refused `HOLDS` (one older than it): acquires name themselves.
    pub holds_refused: AtomicBool,
    /// The module refused a fair or read-write release's `MISSING NOTHELD`
    /// (one older than it): releases go without it.
    pub missing_refused: AtomicBool,
    /// Set when the module refused `LATCH` (one older than it): RLock's
    /// releases name their latch by its request id.
    pub latch_key_refused: AtomicBool,
    pub latch_sweeper: Arc<LatchSweeper>,
    pub watchdog: Watchdog,
    /// Where background work (acquire attempts, releases) runs, also when
    /// a guard is dropped outside the runtime.
    pub runtime: tokio::runtime::Handle,
    subscriptions: OnceCell<Subscriptions>,
    /// The blocking waiting mode's connections, when enabled.
    pub blocking: Option<BlockingPool>,
    replica_sync: ReplicaSyncState,
    closed: watch::Receiver<bool>,
}

impl Shared {
    /// Starts the background tasks (the watchdog, the latch sweeper) of a
    /// client that closes when `closed` turns true.
    pub fn start(
        deployment: Deployment,
        connection: Connection,
        options: ClientOptions,
        closed: watch::Receiver<bool>,
    ) -> Self {
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
        Shared {
            id: Uuid::new_v4(),
            connection,
            deployment,
            replica_sync: ReplicaSyncState::new(options.replica_sync, options.cluster_reply_timeout),
            options,
            next_owner: AtomicU64::new(1),
            registry,
            latch_refused: AtomicBool::new(false),
            record_refused: AtomicBool::new(false),
            holds_refused: AtomicBool::new(false),
            missing_refused: AtomicBool::new(false),
            latch_key_refused: AtomicBool::new(false),
            latch_sweeper,
            watchdog,
            runtime: tokio::runtime::Handle::current(),
            subscriptions: OnceCell::new(),
            blocking,
            closed,
        }
    }

    /// Which server (or cluster, or Sentinel group) this client talks to:
    /// a lock's name and this say which lock a handle is.
    pub fn server_label(&self) -> String {
        self.deployment.label()
    }

    pub fn is_closed(&self) -> bool {
        *self.closed.borrow()
    }

    /// Turns true when the last [`Client`](crate::Client) handle is dropped.
    pub fn closed(&self) -> watch::Receiver<bool> {
        self.closed.clone()
    }

    /// What the next acquire must do to sync replicas (`None`: nothing).
    pub async fn replica_sync_plan(&self, key: &[u8]) -> Result<Option<Plan>> {
        if self.replica_sync.surely_unneeded(&self.connection, key) {
            return Ok(None);
        }
        // Boxed: planning may connect, a large future that every acquire's
        // would otherwise carry (and copy) with replica sync off.
        Box::pin(self.replica_sync.plan(&self.deployment, &self.connection, key)).await
    }

    /// The pub/sub connection, opened on first use.
    pub async fn subscriptions(&self) -> Result<&Subscriptions> {
        Ok(self.subscriptions.get_or_try_init(|| Subscriptions::connect(&self.deployment, self.closed.clone())).await?)
    }
}
