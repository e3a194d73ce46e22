//! A deployment behind Redis Sentinel: commands go to the primary the
//! Sentinels name, and follow it to another after a failover.
//!
//! The primary is the one a majority of the Sentinels name and that
//! answers `ROLE` as a primary (during a failover, one Sentinel may still
//! name the old one). The client looks again every [`CHECK_EVERY`], so it
//! moves even when nothing fails (an old primary that resumed after a
//! pause still answers, and would go on granting and renewing), and after
//! a failure a failover explains, at most once per [`LOOK_AGAIN_AFTER`]:
//! the connection dropped, was refused or timed out, or the server
//! answered `READONLY` or, short of replicas, `NOREPLICAS`, also inside a
//! pipeline. The failed command comes back as it would have; the
//! caller's retry, or the watchdog's next renewal, goes to the new
//! primary, where a renewal of a hold it lacks reports the hold lost.

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::{
    Cmd, ConnectionAddr, ConnectionInfo, ErrorKind, IntoConnectionInfo, Pipeline, RedisConnectionInfo, RedisError,
    RedisFuture, RedisResult, ServerErrorKind, Value,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};
use tokio::sync::watch;
use tokio::task::JoinSet;

/// How often the client asks the Sentinels whether the primary moved.
const CHECK_EVERY: Duration = Duration::from_secs(1);
/// How long one Sentinel or the named primary may take to answer.
const ASK_TIMEOUT: Duration = Duration::from_millis(500);
/// Failures ask the Sentinels again only this long after the last look: a
/// primary that refuses every write for a while (`NOREPLICAS` until a
/// replica syncs) fails each retry of each caller, and each would ask
/// every Sentinel.
const LOOK_AGAIN_AFTER: Duration = Duration::from_millis(100);

/// The Sentinels, the name of the primary they watch, the data nodes'
/// settings, and a count of the primary's moves (for pub/sub).
#[derive(Clone)]
pub(crate) struct Sentinels(Arc<SentinelsInner>);

struct SentinelsInner {
    nodes: Vec<ConnectionInfo>,
    primary_name: String,
    settings: RedisConnectionInfo,
    moves: watch::Sender<u64>,
}

impl Sentinels {
    pub fn new(nodes: Vec<ConnectionInfo>, primary_name: &str, settings: RedisConnectionInfo) -> RedisResult<Self> {
        if nodes.is_empty() {
            return Err(RedisError::from((ErrorKind::EmptySentinelList, "no Sentinel address given")));
        }
        let moves = watch::Sender::new(0);
        Ok(Sentinels(Arc::new(SentinelsInner { nodes, primary_name: primary_name.to_owned(), settings, moves })))
    }

    /// The primary's name and the Sentinels' addresses.
    pub fn label(&self) -> String {
        let nodes: Vec<String> = self.0.nodes.iter().map(|node| node.addr().to_string()).collect();
        format!("{} {}", self.0.primary_name, nodes.join(","))
    }

    /// Ticks each time the commands moved to another primary.
    pub fn moves(&self) -> watch::Receiver<u64> {
        self.0.moves.subscribe()
    }

    /// A client of the primary a majority of the Sentinels name now, once
    /// it answers as a primary.
    pub async fn primary(&self) -> RedisResult<redis::Client> {
        let mut asks = JoinSet::new();
        for node in self.0.nodes.iter().cloned() {
            let name = self.0.primary_name.clone();
            asks.spawn(async move { tokio::time::timeout(ASK_TIMEOUT, named_by(node, name)).await.ok()?.ok() });
        }
        let mut named: HashMap<(String, u16), usize> = HashMap::new();
        while let Some(answer) = asks.join_next().await {
            if let Ok(Some(addr)) = answer {
                *named.entry(addr).or_default() += 1;
            }
        }
        let majority = |count: &usize| count * 2 > self.0.nodes.len();
        let Some(((host, port), _)) = named.into_iter().find(|(_, count)| majority(count)) else {
            return Err(RedisError::from((ErrorKind::Io, "no primary named by a majority of the Sentinels")));
        };
        let info = ConnectionAddr::Tcp(host, port).into_connection_info()?.set_redis_settings(self.0.settings.clone());
        let client = redis::Client::open(info)?;
        match tokio::time::timeout(ASK_TIMEOUT, answers_as_primary(&client)).await {
            Ok(Ok(true)) => Ok(client),
            Ok(Err(err)) => Err(err),
            _ => Err(RedisError::from((ErrorKind::Io, "the primary the Sentinels name is not one yet"))),
        }
    }
}

async fn named_by(node: ConnectionInfo, name: String) -> RedisResult<(String, u16)> {
    let mut con = redis::Client::open(node)?.get_multiplexed_async_connection().await?;
    let (host, port): (String, u16) =
        redis::cmd("SENTINEL").arg("get-master-addr-by-name").arg(name).query_async(&mut con).await?;
    Ok((host, port))
}

async fn answers_as_primary(client: &redis::Client) -> RedisResult<bool> {
    let mut con = client.get_multiplexed_async_connection().await?;
    let role: Vec<Value> = redis::cmd("ROLE").query_async(&mut con).await?;
    Ok(matches!(role.first(), Some(Value::BulkString(role)) if role == b"master"))
}

/// The command connection to the current primary.
#[derive(Clone)]
pub(crate) struct PrimaryConnection(Arc<Inner>);

struct Inner {
    sentinels: Sentinels,
    config: ConnectionManagerConfig,
    current: Mutex<(ConnectionAddr, ConnectionManager)>,
    /// One look at the Sentinels at a time; when the last one began.
    following: tokio::sync::Mutex<Option<Instant>>,
}

impl PrimaryConnection {
    /// Connects to the primary the Sentinels name, and starts the periodic
    /// check, which ends when the last clone of the connection is dropped.
    pub async fn connect(sentinels: Sentinels, response_timeout: Option<Duration>) -> RedisResult<Self> {
        // Fail fast rather than retry a dead primary: a failure asks the
        // Sentinels where the primary is now.
        let mut config = ConnectionManagerConfig::new()
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(100))
            .set_connection_timeout(Some(ASK_TIMEOUT));
        if let Some(timeout) = response_timeout {
            config = config.set_response_timeout(Some(timeout));
        }
        let current = Mutex::new(open(&sentinels, &config).await?);
        let connection = Self(Arc::new(Inner { sentinels, config, current, following: Default::default() }));
        tokio::spawn(check_periodically(Arc::downgrade(&connection.0)));
        Ok(connection)
    }

    fn current(&self) -> (ConnectionAddr, ConnectionManager) {
        self.0.current.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Moves to the primary the Sentinels name, unless another call moved
    /// since the primary at `seen` was used, or the last look began less
    /// than [`LOOK_AGAIN_AFTER`] ago. A failed look changes nothing (the
    /// Sentinels may not have failed over yet).
    async fn follow(&self, seen: &ConnectionAddr) {
        let mut last_look = self.0.following.lock().await;
        if self.current().0 != *seen || last_look.is_some_and(|at| at.elapsed() < LOOK_AGAIN_AFTER) {
            return;
        }
        *last_look = Some(Instant::now());
        if let Ok(client) = self.0.sentinels.primary().await {
            if client.get_connection_info().addr() == seen {
                return;
            }
            let addr = client.get_connection_info().addr().clone();
            if let Ok(connection) = ConnectionManager::new_with_config(client, self.0.config.clone()).await {
                *self.0.current.lock().unwrap_or_else(PoisonError::into_inner) = (addr, connection);
                self.0.sentinels.0.moves.send_modify(|moves| *moves += 1);
            }
        }
    }
}

async fn open(
    sentinels: &Sentinels,
    config: &ConnectionManagerConfig,
) -> RedisResult<(ConnectionAddr, ConnectionManager)> {
    let client = sentinels.primary().await?;
    let addr = client.get_connection_info().addr().clone();
    Ok((addr, ConnectionManager::new_with_config(client, config.clone()).await?))
}

async fn check_periodically(connection: Weak<Inner>) {
    loop {
        tokio::time::sleep(CHECK_EVERY).await;
        let Some(inner) = connection.upgrade() else { return };
        let connection = PrimaryConnection(inner);
        let seen = connection.current().0;
        connection.follow(&seen).await;
    }
}

/// `NOREPLICAS`: a primary short of the good replicas
/// `min-replicas-to-write` asks for refuses writes, as an old primary cut
/// off from its replicas does once the Sentinels may have promoted one.
const NO_REPLICAS: &str = "NOREPLICAS";

fn primary_may_have_moved(err: &RedisError) -> bool {
    err.is_io_error()
        || err.is_connection_dropped()
        || err.is_connection_refusal()
        || err.is_timeout()
        || err.kind() == ErrorKind::Server(ServerErrorKind::ReadOnly)
        || err.code() == Some(NO_REPLICAS)
}

/// A pipeline's replies with errors ignored: a `READONLY` (or a
/// `NOREPLICAS`) among them.
fn answered_as_replica(replies: &[Value]) -> bool {
    replies.iter().any(|reply| {
        matches!(reply, Value::ServerError(err)
            if err.kind() == Some(ServerErrorKind::ReadOnly) || err.code() == NO_REPLICAS)
    })
}

impl ConnectionLike for PrimaryConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let (addr, mut connection) = self.current();
            let result = connection.req_packed_command(cmd).await;
            if result.as_ref().is_err_and(primary_may_have_moved) {
                self.follow(&addr).await;
            }
            result
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let (addr, mut connection) = self.current();
            let result = connection.req_packed_commands(cmd, offset, count).await;
            let moved = match &result {
                Ok(replies) => answered_as_replica(replies),
                Err(err) => primary_may_have_moved(err),
            };
            if moved {
                self.follow(&addr).await;
            }
            result
        })
    }

    fn get_db(&self) -> i64 {
        self.current().1.get_db()
    }
}
