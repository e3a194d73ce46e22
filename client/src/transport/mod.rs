//! Talking to Redis: the shared connection (single node, cluster with
//! per-node pipelines, or the primary Sentinel names), the pub/sub connection, its subscriptions and which
//! waiters a message wakes, the
//! blocking pool, replica sync and the latch sweeper. Knows nothing of
//! the lock engine.

pub(crate) mod blocking_pool;
pub(crate) mod cluster;
pub(crate) mod connection;
pub(crate) mod latch_sweeper;
pub(crate) mod pubsub;
pub(crate) mod replica_sync;
pub(crate) mod sentinel;
pub(crate) mod subscriptions;
pub(crate) mod wakeups;

use redis::{RedisError, RedisResult, Value};

/// The error of a request that got no answer within its timeout.
pub(crate) fn timed_out(what: impl std::fmt::Display) -> RedisError {
    std::io::Error::new(std::io::ErrorKind::TimedOut, format!("{what}: no reply in time")).into()
}

/// One reply per command of [`Connection::per_node_pipelines`](connection::Connection::per_node_pipelines).
pub(crate) struct NodeReplies {
    pub replies: Vec<RedisResult<Value>>,
    /// False when some node failed or timed out (or was unknown): its
    /// commands' replies are that error.
    pub all_answered: bool,
}

impl NodeReplies {
    pub fn failed(count: usize, err: RedisError) -> Self {
        Self { replies: vec![Err(err); count], all_answered: false }
    }
}
