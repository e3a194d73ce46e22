//! Connections to one server or to a Redis Cluster, for commands (pub/sub:
//! see pubsub.rs).

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::{Cmd, ConnectionInfo, Pipeline, RedisFuture, RedisResult, Value};
use std::collections::HashMap;
use std::time::Duration;

/// Where the client connects.
#[derive(Clone)]
pub(crate) enum Deployment {
    Single(redis::Client),
    /// Seed nodes of a cluster.
    Cluster(Vec<ConnectionInfo>),
}

impl Deployment {
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
            Deployment::Cluster(nodes) => {
                let mut builder = ClusterClientBuilder::new(nodes.clone());
                if let Some(timeout) = response_timeout {
                    builder = builder.response_timeout(timeout);
                }
                Connection::Cluster(builder.build()?.get_async_connection().await?)
            }
        })
    }
}

/// Commands go to one server, or are routed by key slot in a cluster.
#[derive(Clone)]
pub(crate) enum Connection {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Connection {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Connection::Single(c) => c.req_packed_command(cmd),
            Connection::Cluster(c) => c.req_packed_command(cmd),
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
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Connection::Single(c) => c.get_db(),
            Connection::Cluster(c) => c.get_db(),
        }
    }
}

impl Connection {
    /// Runs `cmd` on the server (in a cluster: the primary) that serves `key`.
    pub async fn query_for_key<T: redis::FromRedisValue>(&mut self, key: &[u8], cmd: Cmd) -> RedisResult<T> {
        match self {
            Connection::Single(connection) => cmd.query_async(connection).await,
            Connection::Cluster(connection) => {
                let route = redis::cluster_routing::Route::with_key(key, redis::cluster_routing::SlotAddr::Master);
                let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route));
                Ok(redis::from_redis_value(connection.route_command(cmd, routing).await?)?)
            }
        }
    }

    /// Runs single-key commands (`(key, command)` pairs) in as few round
    /// trips as the deployment allows: one pipeline on one server, one per
    /// primary in a cluster (a pipeline cannot span slots on its own). The
    /// replies come back in order; an error for one command fails that
    /// command only.
    pub async fn per_node_pipelines(&mut self, commands: Vec<(Vec<u8>, Cmd)>) -> RedisResult<Vec<RedisResult<Value>>> {
        match self {
            Connection::Single(connection) => {
                let mut pipe = redis::pipe();
                commands.into_iter().for_each(|(_, cmd)| {
                    pipe.add_command(cmd);
                });
                pipe.ignore_errors().query_async(connection).await
            }
            Connection::Cluster(connection) => {
                let owners = slot_owners(connection).await?;
                let mut groups: HashMap<(String, u16), (Pipeline, Vec<usize>)> = HashMap::new();
                let count = commands.len();
                for (index, (key, cmd)) in commands.into_iter().enumerate() {
                    let owner = owners.owner(key_slot(&key)).cloned().unwrap_or_default();
                    let (pipe, indexes) = groups.entry(owner).or_insert_with(|| (redis::pipe(), vec![]));
                    pipe.add_command(cmd);
                    indexes.push(index);
                }
                let mut replies: Vec<RedisResult<Value>> = (0..count).map(|_| Ok(Value::Nil)).collect();
                let mut rounds = tokio::task::JoinSet::new();
                for ((host, port), (pipe, indexes)) in groups {
                    let mut connection = connection.clone();
                    rounds.spawn(async move {
                        let len = indexes.len();
                        let route = SingleNodeRoutingInfo::ByAddress { host, port };
                        (indexes, connection.route_pipeline(pipe, 0, len, route).await)
                    });
                }
                while let Some(round) = rounds.join_next().await {
                    let (indexes, result) = round.map_err(|e| redis::RedisError::from(std::io::Error::other(e)))?;
                    let values = result?;
                    for (index, value) in indexes.into_iter().zip(values) {
                        replies[index] = match value {
                            Value::ServerError(err) => Err(err.into()),
                            value => Ok(value),
                        };
                    }
                }
                Ok(replies)
            }
        }
    }
}

/// Which primary serves each slot, from CLUSTER SLOTS.
struct SlotOwners(Vec<(u16, u16, (String, u16))>);

impl SlotOwners {
    fn owner(&self, slot: u16) -> Option<&(String, u16)> {
        self.0.iter().find(|(start, end, _)| *start <= slot && slot <= *end).map(|(_, _, owner)| owner)
    }
}

/// Reads the slot map (entries `[start, end, [host, port, ...], ...]`).
async fn slot_owners(connection: &mut ClusterConnection) -> RedisResult<SlotOwners> {
    let ranges: Vec<Vec<Value>> = redis::cmd("CLUSTER").arg("SLOTS").query_async(connection).await?;
    let owners = ranges
        .into_iter()
        .filter_map(|range| {
            let int = |v: &Value| redis::from_redis_value::<i64>(v.clone()).ok();
            let primary: Vec<Value> = redis::from_redis_value(range.get(2)?.clone()).ok()?;
            let host: String = redis::from_redis_value(primary.first()?.clone()).ok()?;
            let port = u16::try_from(int(primary.get(1)?)?).ok()?;
            Some((u16::try_from(int(range.first()?)?).ok()?, u16::try_from(int(range.get(1)?)?).ok()?, (host, port)))
        })
        .collect();
    Ok(SlotOwners(owners))
}

/// A key's cluster slot: CRC16 (XMODEM) of the key, or of its hash tag
/// (the part between the first `{` and the next `}`, when not empty),
/// modulo 16384.
pub(crate) fn key_slot(key: &[u8]) -> u16 {
    let hashed = key
        .iter()
        .position(|&b| b == b'{')
        .and_then(|open| {
            let rest = &key[open + 1..];
            rest.iter().position(|&b| b == b'}').filter(|&close| close > 0).map(|close| &rest[..close])
        })
        .unwrap_or(key);
    crc16(hashed) % 16384
}

fn crc16(bytes: &[u8]) -> u16 {
    bytes.iter().fold(0u16, |crc, &byte| {
        (0..8)
            .fold(crc ^ (u16::from(byte) << 8), |crc, _| if crc & 0x8000 != 0 { (crc << 1) ^ 0x1021 } else { crc << 1 })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_slots_match_redis_cluster_keyslot() {
        // Values from CLUSTER KEYSLOT on Redis 7.0.
        let cases: &[(&[u8], u16)] = &[
            (b"foo", 12182),
            (b"123456789", 12739),
            (b"{user1000}.following", 3443),
            (b"{user1000}.followers", 3443),
            (b"user1000", 3443),
            (b"foo{}{bar}", 8363),
            (b"foo{{bar}}zap", 4015),
            (b"foo{bar}{zap}", 5061),
            (b"", 0),
        ];
        for (key, slot) in cases {
            assert_eq!(key_slot(key), *slot, "{:?}", String::from_utf8_lossy(key));
        }
    }
}
