//! Replica sync: after an acquire, `WAIT` until replicas have the lock; if
//! they do not acknowledge in time, give the lock back and report it.
//! This narrows (it cannot close) the window in which a failover loses a
//! lock the old primary granted but had not yet replicated.

use crate::error::Result;
use crate::transport::cluster::Node;
use crate::transport::connection::{within, Connection, Deployment, ReplyBound};
use rlock_protocol::key_slot;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::OnceCell;
use tokio::time::Instant;

/// How long a count of connected replicas is trusted.
const REPLICA_COUNT_TTL: Duration = Duration::from_secs(1);

/// At most this many bounds for a synced acquire queued behind others
/// (see [`Plan::in_line`]). Their `WAIT`s block the connection only while
/// replicas do not acknowledge (each then takes its whole timeout), and
/// such acquires fail with `ReplicaSync` anyway; past a few, stretching
/// the bound further would only keep a hung node from being noticed: with
/// a hundred acquires in flight, a hundred bounds (over three minutes by
/// default), longer than a failover takes (`cluster-node-timeout`, 15 s by
/// default, then the election). Four bounds are 8 s by default. An acquire
/// queued deeper that times out is settled by its request id like any
/// other, on the owner the slot map names then.
pub(crate) const MAX_IN_LINE: u32 = 4;

/// Whether and how acquires wait for replicas. Redisson (3.17+) waits for
/// all connected replicas by default, and so does this client.
///
/// ```
/// use rlock_client::{ClientOptions, ReplicaSync};
/// use std::time::Duration;
///
/// assert_eq!(ReplicaSync::default(), ReplicaSync::AllReplicas { timeout: Duration::from_secs(1) });
/// // An acquire counts once one replica has it, within 50 ms:
/// let sync = ReplicaSync::Replicas { count: 1, timeout: Duration::from_millis(50) };
/// let options = ClientOptions::default().with_replica_sync(sync);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReplicaSync {
    /// No `WAIT`: an acquire returns as soon as the primary granted it.
    Off,
    /// `WAIT` for every replica connected to the primary (from
    /// `INFO replication`, refreshed at most once a second); no `WAIT`
    /// while there are none.
    AllReplicas {
        /// How long `WAIT` may block.
        timeout: Duration,
    },
    /// `WAIT` for this many acknowledgements.
    Replicas {
        /// Acknowledgements required.
        count: u32,
        /// How long `WAIT` may block.
        timeout: Duration,
    },
}

impl Default for ReplicaSync {
    fn default() -> Self {
        ReplicaSync::AllReplicas { timeout: Duration::from_secs(1) }
    }
}

/// What one acquire must do: `WAIT required timeout` on `connection`.
pub(crate) struct Plan {
    pub connection: Connection,
    pub required: u32,
    pub timeout: Duration,
    /// Synced acquires in flight to the same node (by the slot map as last
    /// read; one count on one server).
    in_flight: Arc<AtomicUsize>,
}

impl Plan {
    /// `WAIT required timeout`: acknowledgements of every write made on
    /// the plan's connection so far.
    pub fn wait(&self) -> redis::Cmd {
        let mut wait = redis::cmd("WAIT");
        wait.arg(self.required).arg(self.timeout.as_millis() as u64);
        wait
    }

    /// Counts this acquire in flight until the returned guard drops, and
    /// stretches `bound` by one more for each synced acquire already in
    /// flight to its node, up to [`MAX_IN_LINE`] bounds: their `WAIT`s
    /// block the connection, and the time this one queues behind them on
    /// the client's side must not count as its node's (nor make the
    /// cluster reroute a healthy slot).
    pub fn in_line(&self, bound: &ReplyBound) -> (InFlight, ReplyBound) {
        let ahead = self.in_flight.fetch_add(1, Ordering::SeqCst);
        let factor = u32::try_from(ahead).unwrap_or(u32::MAX).saturating_add(1).min(MAX_IN_LINE);
        let bound = bound.as_ref().map(|(cluster, bound)| (cluster.clone(), bound.saturating_mul(factor)));
        (InFlight(self.in_flight.clone()), bound)
    }
}

/// A synced acquire in flight (see [`Plan::in_line`]).
pub(crate) struct InFlight(Arc<AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

pub(crate) struct ReplicaSyncState {
    mode: ReplicaSync,
    /// `WAIT` blocks its connection, so synced acquires get their own and
    /// never hold up renewals and releases.
    connection: OnceCell<Connection>,
    /// Synced acquires in flight per node (see [`Plan::in_line`]).
    in_flight: Mutex<HashMap<Option<Node>, Arc<AtomicUsize>>>,
    /// Connected replicas per key slot's primary (one entry on one server).
    known_replicas: Mutex<HashMap<u16, (u32, Instant)>>,
    /// How long a cluster node may take to tell its replicas.
    reply_timeout: Duration,
}

impl ReplicaSyncState {
    pub fn new(mode: ReplicaSync, reply_timeout: Duration) -> Self {
        let (connection, in_flight, known_replicas) = (OnceCell::new(), Mutex::default(), Mutex::default());
        Self { mode, connection, in_flight, known_replicas, reply_timeout }
    }

    /// Whether the next acquire of `key` surely needs no `WAIT`, known
    /// without a request: sync off, or no replica connected when last
    /// counted (the common case, checked before any future is made).
    pub fn surely_unneeded(&self, main: &Connection, key: &[u8]) -> bool {
        match self.mode {
            ReplicaSync::Off => true,
            ReplicaSync::Replicas { count, .. } => count == 0,
            ReplicaSync::AllReplicas { .. } => self.known_replicas(main, key).1 == Some(0),
        }
    }

    /// The plan for the next acquire of `key`; `None` when no `WAIT` is needed.
    pub async fn plan(&self, deployment: &Deployment, main: &Connection, key: &[u8]) -> Result<Option<Plan>> {
        let (required, timeout) = match self.mode {
            ReplicaSync::Off => return Ok(None),
            ReplicaSync::Replicas { count, timeout } => (count, timeout),
            ReplicaSync::AllReplicas { timeout } => (self.connected_replicas(main, key).await?, timeout),
        };
        if required == 0 {
            return Ok(None);
        }
        // The WAIT reply may take its whole timeout. In a cluster no response
        // timeout (redis-rs would send a timed-out command again, a give-back's
        // release included): the acquire bounds its own wait (see `acknowledged`).
        let response_timeout = match deployment {
            Deployment::Cluster(..) => None,
            _ => Some(timeout.saturating_add(Duration::from_secs(1))),
        };
        let connect = || deployment.connect_apart(response_timeout);
        let connection = self.connection.get_or_try_init(connect).await?.clone();
        let node = match main {
            Connection::Cluster(cluster) => cluster.known_owner(key_slot(key)),
            Connection::Single(_) | Connection::Sentinel(_) => None,
        };
        let in_flight =
            self.in_flight.lock().unwrap_or_else(std::sync::PoisonError::into_inner).entry(node).or_default().clone();
        Ok(Some(Plan { connection, required, timeout, in_flight }))
    }

    /// Replicas connected to the primary that serves `key`.
    async fn connected_replicas(&self, main: &Connection, key: &[u8]) -> Result<u32> {
        let (slot, known) = self.known_replicas(main, key);
        if let Some(count) = known {
            return Ok(count);
        }
        let mut info = redis::cmd("INFO");
        info.arg("replication");
        // A read, safe to give up on: a hung node's slot is looked up again.
        let bound = main.reply_bound(self.reply_timeout);
        let info: String = within(&bound, key, main.clone().query_for_key(key, info)).await?;
        let count = info
            .lines()
            .find_map(|line| line.strip_prefix("connected_slaves:"))
            .and_then(|count| count.trim().parse().ok())
            .unwrap_or(0);
        self.known_replicas
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(slot, (count, Instant::now()));
        Ok(count)
    }

    /// The slot of `key`'s primary (0 outside a cluster), and its replicas
    /// as counted within [`REPLICA_COUNT_TTL`].
    fn known_replicas(&self, main: &Connection, key: &[u8]) -> (u16, Option<u32>) {
        let slot = match main {
            Connection::Single(_) | Connection::Sentinel(_) => 0,
            Connection::Cluster(_) => key_slot(key),
        };
        let cached = self.known_replicas.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&slot).copied();
        (slot, cached.filter(|(_, at)| at.elapsed() < REPLICA_COUNT_TTL).map(|(count, _)| count))
    }
}
