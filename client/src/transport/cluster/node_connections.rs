//! Connections of this client's own to single cluster nodes, opened when
//! first needed, for the nodes redis-rs's cluster connection may not reach
//! (it keeps connections to the primaries it knows, and a command routed
//! by address to any other node makes it reconnect to every seed node,
//! holding up all of its commands the while): the nodes a slot map is read
//! from, a slot's new owner before redis-rs has learned of it, and every
//! request that must run once (see `send_once`).
//!
//! No response timeout: a caller that may give up bounds its own wait, and
//! nothing is ever sent again here.
//!
//! A connection that sat idle may have been closed meanwhile (the server's
//! `timeout`, `CLIENT KILL`, a restart, a proxy), and redis-rs fails a
//! request on a closed connection with the same error whether or not it
//! wrote it. So one idle longer than [`IDLE_CHECK`] is asked a `PING`
//! before it is handed out: when that finds it closed, nothing of the
//! caller's request was given to it, and the caller gets a new connection.

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, ConnectionAddr, ConnectionInfo, RedisResult};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long opening a connection to a node may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// A connection handed out within this long is handed out again as it is:
/// Redis's `timeout` is whole seconds, at least 1, and closes only
/// connections idle longer than that. A close it did not make (a kill, a
/// restart) in this while is seen as before, by the request failing.
const IDLE_CHECK: Duration = Duration::from_secs(1);

/// A node's address as CLUSTER SLOTS names it (and redis-rs routes by).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Node {
    pub host: String,
    pub port: u16,
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

pub(crate) struct NodeConnections {
    /// A seed node's settings (database, credentials, TLS): each node's
    /// connection takes them with its own address.
    template: Option<ConnectionInfo>,
    open: Mutex<HashMap<Node, Open>>,
}

struct Open {
    connection: MultiplexedConnection,
    /// When it was last handed out (before its request was sent, so never
    /// later than the server last heard from it).
    used: Instant,
}

impl NodeConnections {
    pub fn new(template: Option<ConnectionInfo>) -> Self {
        Self { template, open: Mutex::default() }
    }

    /// Another set, none open yet, with the same settings: for commands
    /// that block their connection (`WAIT`), which must not hold up these.
    pub fn apart(&self) -> Self {
        Self::new(self.template.clone())
    }

    /// The connection to `node`, opened now if there is none or the open
    /// one was found closed.
    pub async fn get(&self, node: &Node) -> RedisResult<MultiplexedConnection> {
        match self.open_one(node) {
            Some((connection, false)) => return Ok(connection),
            Some((mut connection, true)) => match redis::cmd("PING").query_async::<()>(&mut connection).await {
                Err(err) if err.is_unrecoverable_error() => self.failed(node),
                // Any reply, an error one too, shows the connection works.
                _ => {
                    self.touch(node);
                    return Ok(connection);
                }
            },
            None => {}
        }
        let template = self.template.clone().ok_or_else(|| {
            redis::RedisError::from((redis::ErrorKind::InvalidClientConfig, "no seed node to take settings from"))
        })?;
        let addr = match template.addr() {
            ConnectionAddr::TcpTls { insecure, tls_params, .. } => ConnectionAddr::TcpTls {
                host: node.host.clone(),
                port: node.port,
                insecure: *insecure,
                tls_params: tls_params.clone(),
            },
            _ => ConnectionAddr::Tcp(node.host.clone(), node.port),
        };
        let client = redis::Client::open(template.set_addr(addr))?;
        let config =
            AsyncConnectionConfig::new().set_connection_timeout(Some(CONNECT_TIMEOUT)).set_response_timeout(None);
        let connection = client.get_multiplexed_async_connection_with_config(&config).await?;
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let open = open.entry(node.clone()).or_insert(Open { connection, used: Instant::now() });
        Ok(open.connection.clone())
    }

    /// The open connection to `node`, and whether it sat idle longer than
    /// [`IDLE_CHECK`] (else it counts as used now).
    fn open_one(&self, node: &Node) -> Option<(MultiplexedConnection, bool)> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let open = open.get_mut(node)?;
        let now = Instant::now();
        let idle = now.duration_since(open.used) > IDLE_CHECK;
        if !idle {
            open.used = now;
        }
        Some((open.connection.clone(), idle))
    }

    /// Counts the connection to `node` as used now.
    fn touch(&self, node: &Node) {
        if let Some(open) = self.open.lock().unwrap_or_else(PoisonError::into_inner).get_mut(node) {
            open.used = Instant::now();
        }
    }

    /// Drops the connection to `node` after it failed (not after a slow
    /// reply): the next request opens another.
    pub fn failed(&self, node: &Node) {
        self.open.lock().unwrap_or_else(PoisonError::into_inner).remove(node);
    }
}
