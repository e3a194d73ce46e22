//! Talking to Redis: the shared connection (single node, cluster with
//! per-node pipelines, or the primary Sentinel names), the pub/sub connection, its subscriptions and which
//! waiters a message wakes, the
//! blocking pool, replica sync and the latch sweeper. Knows nothing of
//! the lock engine.

pub(crate) mod blocking_pool;
pub(crate) mod cluster_nodes;
pub(crate) mod connection;
pub(crate) mod handback;
pub(crate) mod latch_sweeper;
pub(crate) mod node_connections;
pub(crate) mod node_pipelines;
pub(crate) mod pubsub;
pub(crate) mod replica_sync;
pub(crate) mod sentinel;
pub(crate) mod slot_map;
pub(crate) mod slot_map_cache;
pub(crate) mod subscriptions;
pub(crate) mod wakeups;
