//! Replica sync: after an acquire, `WAIT` until replicas have the lock; if
//! they do not acknowledge in time, give the lock back and report it.
//! This narrows (it cannot close) the window in which a failover loses a
//! lock the old primary granted but had not yet replicated.

use crate::error::Result;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use std::sync::Mutex;
use std::time::Duration;
use tokio::sync::OnceCell;
use tokio::time::Instant;

/// How long a count of connected replicas is trusted.
const REPLICA_COUNT_TTL: Duration = Duration::from_secs(1);

/// Whether and how acquires wait for replicas. Redisson (3.17+) waits for
/// all connected replicas by default, and so does this client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplicaSync {
    /// No `WAIT`: an acquire returns as soon as the primary granted it.
    Off,
    /// `WAIT` for every replica connected to the primary (from
    /// `INFO replication`, refreshed at most once a second); no `WAIT`
    /// while there are none.
    AllReplicas { timeout: Duration },
    /// `WAIT` for this many acknowledgements.
    Replicas { count: u32, timeout: Duration },
}

impl Default for ReplicaSync {
    fn default() -> Self {
        ReplicaSync::AllReplicas { timeout: Duration::from_secs(1) }
    }
}

/// What one acquire must do: `WAIT required timeout` on `connection`.
pub(crate) struct Plan {
    pub connection: ConnectionManager,
    pub required: u32,
    pub timeout: Duration,
}

pub(crate) struct ReplicaSyncState {
    mode: ReplicaSync,
    /// `WAIT` blocks its connection, so synced acquires get their own and
    /// never hold up renewals and releases.
    connection: OnceCell<ConnectionManager>,
    known_replicas: Mutex<Option<(u32, Instant)>>,
}

impl ReplicaSyncState {
    pub fn new(mode: ReplicaSync) -> Self {
        Self { mode, connection: OnceCell::new(), known_replicas: Mutex::new(None) }
    }

    /// The plan for the next acquire; `None` when no `WAIT` is needed.
    pub async fn plan(&self, redis: &redis::Client, main: &ConnectionManager) -> Result<Option<Plan>> {
        let (required, timeout) = match self.mode {
            ReplicaSync::Off => return Ok(None),
            ReplicaSync::Replicas { count, timeout } => (count, timeout),
            ReplicaSync::AllReplicas { timeout } => (self.connected_replicas(main).await?, timeout),
        };
        if required == 0 {
            return Ok(None);
        }
        let connection = self
            .connection
            .get_or_try_init(|| {
                // The WAIT reply may take its whole timeout.
                let config =
                    ConnectionManagerConfig::new().set_response_timeout(Some(timeout + Duration::from_secs(1)));
                ConnectionManager::new_with_config(redis.clone(), config)
            })
            .await?
            .clone();
        Ok(Some(Plan { connection, required, timeout }))
    }

    async fn connected_replicas(&self, main: &ConnectionManager) -> Result<u32> {
        let cached = *self.known_replicas.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((count, _)) = cached.filter(|(_, at)| at.elapsed() < REPLICA_COUNT_TTL) {
            return Ok(count);
        }
        let info: String = redis::cmd("INFO").arg("replication").query_async(&mut main.clone()).await?;
        let count = info
            .lines()
            .find_map(|line| line.strip_prefix("connected_slaves:"))
            .and_then(|count| count.trim().parse().ok())
            .unwrap_or(0);
        *self.known_replicas.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some((count, Instant::now()));
        Ok(count)
    }
}
