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

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, ConnectionAddr, ConnectionInfo, RedisResult};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

/// How long opening a connection to a node may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

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
    open: Mutex<HashMap<Node, MultiplexedConnection>>,
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

    /// The connection to `node`, opened now if there is none.
    pub async fn get(&self, node: &Node) -> RedisResult<MultiplexedConnection> {
        if let Some(connection) = self.open.lock().unwrap_or_else(PoisonError::into_inner).get(node) {
            return Ok(connection.clone());
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
        Ok(open.entry(node.clone()).or_insert(connection).clone())
    }

    /// Drops the connection to `node` after it failed (not after a slow
    /// reply): the next request opens another.
    pub fn failed(&self, node: &Node) {
        self.open.lock().unwrap_or_else(PoisonError::into_inner).remove(node);
    }
}
