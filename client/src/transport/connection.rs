//! Connections to one server or to a Redis Cluster, for commands (pub/sub:
//! see pubsub.rs).

use crate::transport::cluster::{Cluster, Node, Seeds};
use crate::transport::sentinel::{PrimaryConnection, Sentinels};
use crate::transport::{timed_out, NodeReplies};
use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::{Cmd, Pipeline, RedisError, RedisFuture, RedisResult, Value};
use std::future::Future;
use std::time::Duration;

/// Where the client connects.
#[derive(Clone)]
pub(crate) enum Deployment {
    Single(redis::Client),
    /// Seed nodes of a cluster, and the slot map every connection to it
    /// shares.
    Cluster(Seeds),
    /// The primary Redis Sentinel names, whichever it is now.
    Sentinel(Sentinels),
}

impl Deployment {
    /// Names the servers: the address of one, a cluster's seed nodes, or
    /// the primary's name and the Sentinels.
    pub fn label(&self) -> String {
        match self {
            Deployment::Single(client) => client.get_connection_info().addr().to_string(),
            Deployment::Cluster(seeds) => {
                let nodes: Vec<String> = seeds.nodes().iter().map(|node| node.addr().to_string()).collect();
                format!("cluster {}", nodes.join(","))
            }
            Deployment::Sentinel(sentinels) => format!("sentinel {}", sentinels.label()),
        }
    }

    /// A command connection; `response_timeout` overrides redis-rs's.
    pub async fn connect(&self, response_timeout: Option<Duration>) -> RedisResult<Connection> {
        Ok(match self {
            Deployment::Single(client) => {
                let mut config = ConnectionManagerConfig::new();
                if let Some(timeout) = response_timeout {
                    config = config.set_response_timeout(Some(timeout));
                }
                Connection::Single(ConnectionManager::new_with_config(client.clone(), config).await?)
            }
            Deployment::Cluster(seeds) => Connection::Cluster(seeds.connect(response_timeout).await?),
            Deployment::Sentinel(sentinels) => {
                // Boxed: its future would deepen every caller's type past the compiler's limit.
                Connection::Sentinel(Box::pin(PrimaryConnection::connect(sentinels.clone(), response_timeout)).await?)
            }
        })
    }
}

impl Deployment {
    /// A connection for commands that block it (replica sync's `WAIT`): in
    /// a cluster with the client's own connections to single nodes apart
    /// from the shared ones (renewals, listings, slot map reads), so that
    /// a blocked `WAIT` holds up nothing else; `response_timeout` as in
    /// [`Deployment::connect`].
    pub async fn connect_apart(&self, response_timeout: Option<Duration>) -> RedisResult<Connection> {
        let connection = self.connect(response_timeout).await?;
        Ok(match connection {
            Connection::Cluster(cluster) => Connection::Cluster(cluster.apart()),
            connection => connection,
        })
    }
}

/// Commands go to one server, or are routed by key slot in a cluster, or
/// go to the primary Sentinel names.
#[derive(Clone)]
pub(crate) enum Connection {
    Single(ConnectionManager),
    Cluster(Cluster),
    Sentinel(PrimaryConnection),
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Connection::Single(c) => c.req_packed_command(cmd),
            Connection::Cluster(c) => c.req_packed_command(cmd),
            Connection::Sentinel(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Connection::Single(c) => c.req_packed_commands(cmd, offset, count),
            Connection::Cluster(c) => c.req_packed_commands(cmd, offset, count),
            Connection::Sentinel(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Connection::Single(c) => c.get_db(),
            Connection::Cluster(c) => c.get_db(),
            Connection::Sentinel(c) => c.get_db(),
        }
    }
}

impl Connection {
    pub fn is_cluster(&self) -> bool {
        matches!(self, Connection::Cluster(_))
    }

    /// Runs `cmd` on the server (in a cluster: the primary) that serves `key`.
    pub async fn query_for_key<T: redis::FromRedisValue>(&mut self, key: &[u8], cmd: Cmd) -> RedisResult<T> {
        match self {
            Connection::Single(connection) => cmd.query_async(connection).await,
            Connection::Sentinel(connection) => cmd.query_async(connection).await,
            Connection::Cluster(cluster) => cluster.query_for_key(key, cmd).await,
        }
    }

    /// The bound of a settleable request on this connection: `timeout` in
    /// a cluster, none elsewhere (see [`within`]).
    pub fn reply_bound(&self, timeout: Duration) -> ReplyBound {
        match self {
            Connection::Cluster(cluster) => Some((cluster.clone(), timeout)),
            _ => None,
        }
    }

    /// The servers that hold keys: this one (`None`), or in a cluster
    /// every primary (read within `timeout`).
    pub async fn key_servers(&self, timeout: Duration) -> RedisResult<Vec<Option<Node>>> {
        match self {
            Connection::Cluster(cluster) => Ok(cluster.primaries(timeout).await?.into_iter().map(Some).collect()),
            _ => Ok(vec![None]),
        }
    }

    /// Runs `cmd` on `server`, one of [`Connection::key_servers`]'.
    pub async fn query_on<T: redis::FromRedisValue>(&mut self, server: Option<&Node>, cmd: Cmd) -> RedisResult<T> {
        match (self, server) {
            (Connection::Cluster(cluster), Some(node)) => cluster.query_on(node, cmd).await,
            (connection, _) => cmd.query_async(connection).await,
        }
    }

    /// Runs single-key commands (`(key, command)` pairs) in as few round
    /// trips as the deployment allows: one pipeline on one server, one per
    /// primary in a cluster (a pipeline cannot span slots on its own), each
    /// given `timeout`. The replies come back in order; an error for one
    /// command, or a node that fails or times out, fails those commands only.
    pub async fn per_node_pipelines(&mut self, commands: Vec<(Vec<u8>, Cmd)>, timeout: Duration) -> NodeReplies {
        match self {
            Connection::Single(connection) => one_pipeline(connection, commands, timeout).await,
            Connection::Sentinel(connection) => one_pipeline(connection, commands, timeout).await,
            Connection::Cluster(cluster) => cluster.per_node_pipelines(commands, timeout).await,
        }
    }
}

/// How long a settleable request may keep its caller waiting on a
/// cluster node: the cluster and the bound (see [`within`]).
pub(crate) type ReplyBound = Option<(Cluster, Duration)>;

/// Waits for `request`, a request for `key`, as long as it takes; with a
/// `bound` (a cluster's), that long at most: then the request is abandoned,
/// never sent again (bound only requests that can be settled). A request
/// that gets no reply in time, also by redis-rs's own timeout, makes the
/// cluster read its slot map again and send the slot's next commands to
/// the owner it names.
pub(crate) async fn within<T>(
    bound: &ReplyBound,
    key: &[u8],
    request: impl Future<Output = RedisResult<T>>,
) -> RedisResult<T> {
    let Some((cluster, bound)) = bound else { return request.await };
    let replied = tokio::time::timeout(*bound, request).await.unwrap_or_else(|_| Err(timed_out("the key's node")));
    if replied.as_ref().is_err_and(RedisError::is_timeout) {
        cluster.reroute(key, *bound).await;
    }
    replied
}

/// The commands in one pipeline to one server, given `timeout`.
async fn one_pipeline(
    connection: &mut impl ConnectionLike,
    commands: Vec<(Vec<u8>, Cmd)>,
    timeout: Duration,
) -> NodeReplies {
    let count = commands.len();
    let mut pipe = redis::pipe();
    commands.into_iter().for_each(|(_, cmd)| {
        pipe.add_command(cmd);
    });
    match tokio::time::timeout(timeout, pipe.ignore_errors().query_async(connection)).await {
        Ok(Ok(replies)) => NodeReplies { replies, all_answered: true },
        Ok(Err(err)) => NodeReplies::failed(count, err),
        Err(_) => NodeReplies::failed(count, timed_out("the server")),
    }
}
