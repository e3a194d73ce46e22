//! A deployment behind Redis Sentinel: commands go to the primary the
//! Sentinels name, and follow it to another after a failover. A command
//! that fails in a way a failover explains (the connection dropped, was
//! refused or timed out, or the server answered READONLY: it is a replica
//! now) asks the Sentinels again and moves to the primary they name; the
//! command itself fails as it would have, so the caller's own retry, or
//! the watchdog's next renewal, goes to the new primary. A renewal there
//! of a hold it does not have reports the hold lost, as any renewal does.

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::sentinel::{SentinelClient, SentinelNodeConnectionInfo, SentinelServerType};
use redis::{
    Cmd, ConnectionAddr, ConnectionInfo, Pipeline, RedisError, RedisFuture, RedisResult, ServerErrorKind, Value,
};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// The Sentinels, and the name of the primary they watch.
#[derive(Clone)]
pub(crate) struct Sentinels(Arc<tokio::sync::Mutex<SentinelClient>>);

impl Sentinels {
    pub fn new(nodes: Vec<ConnectionInfo>, primary_name: &str, node: SentinelNodeConnectionInfo) -> RedisResult<Self> {
        let client = SentinelClient::build(nodes, primary_name.to_owned(), Some(node), SentinelServerType::Master)?;
        Ok(Sentinels(Arc::new(tokio::sync::Mutex::new(client))))
    }

    /// A client of the primary the Sentinels name now (checked with ROLE).
    pub async fn primary(&self) -> RedisResult<redis::Client> {
        self.0.lock().await.async_get_client().await
    }
}

/// The command connection to the current primary.
#[derive(Clone)]
pub(crate) struct PrimaryConnection {
    sentinels: Sentinels,
    config: ConnectionManagerConfig,
    current: Arc<Mutex<(ConnectionAddr, ConnectionManager)>>,
    /// One look at the Sentinels at a time: the failures of one failover
    /// ask once.
    following: Arc<tokio::sync::Mutex<()>>,
}

impl PrimaryConnection {
    pub async fn connect(sentinels: Sentinels, response_timeout: Option<Duration>) -> RedisResult<Self> {
        let mut config = ConnectionManagerConfig::new();
        if let Some(timeout) = response_timeout {
            config = config.set_response_timeout(Some(timeout));
        }
        let current = open(&sentinels, &config).await?;
        Ok(Self { sentinels, config, current: Arc::new(Mutex::new(current)), following: Arc::default() })
    }

    fn current(&self) -> (ConnectionAddr, ConnectionManager) {
        self.current.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// After a failure on the primary at `failed`: moves to the primary
    /// the Sentinels name, unless another call moved already. Errors are
    /// left to the next call (the Sentinels may not have failed over yet).
    async fn follow(&self, failed: &ConnectionAddr) {
        let _one_at_a_time = self.following.lock().await;
        if self.current().0 != *failed {
            return;
        }
        if let Ok((addr, connection)) = open(&self.sentinels, &self.config).await {
            if addr != *failed {
                *self.current.lock().unwrap_or_else(PoisonError::into_inner) = (addr, connection);
            }
        }
    }

    /// After a call on the primary at `addr`: a failure a failover
    /// explains moves to the primary the Sentinels name.
    async fn after<T>(&self, addr: &ConnectionAddr, result: &RedisResult<T>) {
        if result.as_ref().is_err_and(primary_may_have_moved) {
            self.follow(addr).await;
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

fn primary_may_have_moved(err: &RedisError) -> bool {
    err.is_io_error()
        || err.is_connection_dropped()
        || err.is_connection_refusal()
        || err.is_timeout()
        || err.kind() == redis::ErrorKind::Server(ServerErrorKind::ReadOnly)
}

impl ConnectionLike for PrimaryConnection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let (addr, mut connection) = self.current();
            let result = connection.req_packed_command(cmd).await;
            self.after(&addr, &result).await;
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
            self.after(&addr, &result).await;
            result
        })
    }

    fn get_db(&self) -> i64 {
        self.current().1.get_db()
    }
}
