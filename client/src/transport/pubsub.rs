//! The pub/sub connection: RESP3, its pushes (messages, disconnections)
//! going to a handler.
//!
//! On one server it is a plain multiplexed connection: it does not
//! reconnect by itself (redis-rs's connection manager gives up after a few
//! seconds and would keep claiming the old subscriptions), the
//! subscriptions' supervisor replaces it. A cluster connection reconnects
//! and resubscribes node by node by itself.

use crate::transport::connection::Deployment;
use redis::aio::{AsyncPushSender, MultiplexedConnection};
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::{AsyncConnectionConfig, ProtocolVersion, RedisResult};
use rlock_protocol::key_slot;

impl Deployment {
    pub fn is_cluster(&self) -> bool {
        matches!(self, Deployment::Cluster(..))
    }

    /// Behind Sentinel: ticks when the commands moved to another primary,
    /// so that pub/sub moves too (an old primary that hangs never closes
    /// the connection).
    pub fn primary_moves(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        match self {
            Deployment::Sentinel(sentinels) => Some(sentinels.moves()),
            _ => None,
        }
    }

    /// Whether waiters on `channel` for the lock `key` subscribe sharded
    /// (SSUBSCRIBE). The module publishes a release both cluster-wide
    /// (PUBLISH, over the bus) and sharded from the key's node; a sharded
    /// message reaches only subscribers of the channel's slot on that node,
    /// so it serves only when the channel hashes like the key. A name with
    /// `{` but no hash tag (`orders{3`) gives a channel in another slot:
    /// its waiters take the broadcast (SUBSCRIBE).
    pub fn sharded(&self, key: &[u8], channel: &[u8]) -> bool {
        self.is_cluster() && key_slot(key) == key_slot(channel)
    }

    /// A new pub/sub connection whose pushes go to `push`.
    pub async fn connect_pubsub(&self, push: impl AsyncPushSender) -> RedisResult<PubSubConnection> {
        Ok(match self {
            Deployment::Single(client) => PubSubConnection::Single(resp3_pubsub(client, push).await?),
            // The primary now; after a failover, the supervisor's reconnection asks again.
            Deployment::Sentinel(sentinels) => {
                PubSubConnection::Single(resp3_pubsub(&sentinels.primary().await?, push).await?)
            }
            Deployment::Cluster(seeds) => {
                let builder = ClusterClientBuilder::new(seeds.nodes().to_vec())
                    .use_protocol(ProtocolVersion::RESP3)
                    .push_sender(push);
                PubSubConnection::Cluster(builder.build()?.get_async_connection().await?)
            }
        })
    }
}

/// A RESP3 connection to the server of `client`, its pushes going to `push`.
async fn resp3_pubsub(client: &redis::Client, push: impl AsyncPushSender) -> RedisResult<MultiplexedConnection> {
    let info = client.get_connection_info().clone();
    let settings = info.redis_settings().clone().set_protocol(ProtocolVersion::RESP3);
    let client = redis::Client::open(info.set_redis_settings(settings))?;
    let config = AsyncConnectionConfig::new().set_push_sender(push);
    client.get_multiplexed_async_connection_with_config(&config).await
}

pub(crate) enum PubSubConnection {
    Single(MultiplexedConnection),
    Cluster(ClusterConnection),
}

impl PubSubConnection {
    /// SUBSCRIBE, or SSUBSCRIBE when `sharded`; either is routed by the
    /// channel's slot in a cluster.
    pub async fn subscribe(&mut self, channel: &[u8], sharded: bool) -> RedisResult<()> {
        match self {
            PubSubConnection::Single(c) => c.subscribe(channel).await,
            PubSubConnection::Cluster(c) if sharded => c.ssubscribe(channel).await,
            PubSubConnection::Cluster(c) => c.subscribe(channel).await,
        }
    }

    pub async fn unsubscribe(&mut self, channel: &[u8], sharded: bool) -> RedisResult<()> {
        match self {
            PubSubConnection::Single(c) => c.unsubscribe(channel).await,
            PubSubConnection::Cluster(c) if sharded => c.sunsubscribe(channel).await,
            PubSubConnection::Cluster(c) => c.unsubscribe(channel).await,
        }
    }
}
