//! Commands in a cluster, sent to the primaries this client's slot map
//! names: key commands to their slot's, and commands for many keys as one
//! pipeline per primary, each with its own timeout and result, so that a
//! hung or failing node costs its own commands only.
//!
//! redis-rs follows MOVED and ASK replies by itself (and refreshes its
//! own map), but not a failover of a hung primary: a command that times
//! out there is retried there, and redis-rs reads its map again only when
//! the old primary resumes and answers MOVED. So the client routes by its
//! own map: a node that fails or times out, or a key whose slot has no
//! known owner, makes the next command read the map again (from other
//! nodes first), and the commands go to the promoted replica as soon as a
//! node names it. Failed commands are not retried here: the caller
//! settles or retries them as on any transient failure.

use crate::transport::connection::{key_slot, NodeReplies};
use crate::transport::slot_map::{node_may_have_failed, timed_out, Node, SlotMapCache};
use redis::aio::ConnectionLike;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{Arg, Cmd, ErrorKind, Pipeline, RedisError, RedisFuture, RedisResult, Value};
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// How long a key command waits for a stale slot map to be read again
/// before it goes by the old one.
const MAP_READ_TIMEOUT: Duration = Duration::from_millis(500);

/// The module's commands that name no key first.
const KEYLESS: [&[u8]; 2] = [b"RLOCK.LIST", b"RLOCK.WAITERS"];

/// A cluster connection with the slot map its clones share.
#[derive(Clone)]
pub(crate) struct ClusterNodes {
    pub connection: ClusterConnection,
    slot_map: Arc<SlotMapCache>,
}

impl ClusterNodes {
    pub fn new(connection: ClusterConnection) -> Self {
        Self { connection, slot_map: Arc::default() }
    }

    /// The primaries, from the slot map (read again when stale).
    pub async fn primaries(&self, timeout: Duration) -> RedisResult<Vec<Node>> {
        Ok(self.slot_map.get(&self.connection, timeout).await?.primaries())
    }

    /// Runs `cmd` on the primary of `key`'s slot.
    pub async fn query_for_key<T: redis::FromRedisValue>(&self, key: &[u8], cmd: Cmd) -> RedisResult<T> {
        let sent = self.to_owner(key, |mut connection, route| async move {
            connection.route_command(cmd, RoutingInfo::SingleNode(route)).await
        });
        Ok(redis::from_redis_value(sent.await?)?)
    }

    /// Sends a request for `key` (`send` given the connection and a route)
    /// to the primary this client's map names for its slot, the map read
    /// again first when stale; by slot through redis-rs when the map names
    /// none. A failure a failover explains makes the map stale.
    async fn to_owner<T, F>(
        &self,
        key: &[u8],
        send: impl FnOnce(ClusterConnection, SingleNodeRoutingInfo) -> F,
    ) -> RedisResult<T>
    where
        F: Future<Output = RedisResult<T>>,
    {
        let slot = key_slot(key);
        let map = self.slot_map.get(&self.connection, MAP_READ_TIMEOUT).await;
        let Some(node) = map.ok().and_then(|map| map.owner(slot).cloned()) else {
            self.slot_map.slot_unowned();
            let route = SingleNodeRoutingInfo::SpecificNode(Route::new(slot, SlotAddr::Master));
            return send(self.connection.clone(), route).await;
        };
        let route = SingleNodeRoutingInfo::ByAddress { host: node.host.clone(), port: node.port };
        let sent = send(self.connection.clone(), route).await;
        if sent.as_ref().is_err_and(node_may_have_failed) {
            self.slot_map.node_failed(node);
        }
        sent
    }

    /// Runs `cmd` on `node`.
    pub async fn query_on<T: redis::FromRedisValue>(&self, node: &Node, cmd: Cmd) -> RedisResult<T> {
        let route = SingleNodeRoutingInfo::ByAddress { host: node.host.clone(), port: node.port };
        let reply = self.connection.clone().route_command(cmd, RoutingInfo::SingleNode(route)).await?;
        Ok(redis::from_redis_value(reply)?)
    }

    /// Runs single-key `(key, command)` pairs, one pipeline per primary;
    /// `timeout` bounds the slot map refresh and each node's pipeline.
    pub async fn per_node_pipelines(&self, commands: Vec<(Vec<u8>, Cmd)>, timeout: Duration) -> NodeReplies {
        let count = commands.len();
        let map = match self.slot_map.get(&self.connection, timeout).await {
            Ok(map) => map,
            Err(err) => return NodeReplies::failed(count, err),
        };
        let split = split_by_owner(commands, |key| map.owner(key_slot(key)).cloned());
        let mut pipelines = tokio::task::JoinSet::new();
        for (node, (pipe, indexes)) in split.pipelines {
            let mut connection = self.connection.clone();
            pipelines.spawn(async move {
                let route = SingleNodeRoutingInfo::ByAddress { host: node.host.clone(), port: node.port };
                let sent = connection.route_pipeline(pipe, 0, indexes.len(), route);
                let result = tokio::time::timeout(timeout, sent).await.unwrap_or_else(|_| Err(timed_out(&node)));
                (node, indexes, result)
            });
        }
        let unowned = !split.unowned.is_empty();
        let mut all_answered = !unowned;
        let mut answers = Vec::new();
        let mut failed = HashSet::new();
        while let Some(joined) = pipelines.join_next().await {
            // A task that panicked leaves its commands unanswered.
            let Ok((node, indexes, result)) = joined else {
                all_answered = false;
                continue;
            };
            if result.is_err() {
                all_answered = false;
                failed.insert(node);
            }
            answers.push((indexes, result));
        }
        if unowned {
            let unknown = RedisError::from((ErrorKind::ClusterConnectionNotFound, "no known primary for the slot"));
            answers.push((split.unowned, Err(unknown)));
        }
        self.slot_map.report(failed, unowned);
        NodeReplies { replies: merge(count, answers), all_answered }
    }
}

/// A module command (`RLOCK.ACQUIRE`, `RFAIR.RENEW`…) goes to its key's
/// primary as this client's map names it (see [`ClusterNodes::to_owner`]);
/// other commands (a keyless `WAIT`) and pipelines that start with none go
/// by redis-rs's routing.
impl ConnectionLike for ClusterNodes {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        let Some(key) = routing_key(cmd) else { return self.connection.req_packed_command(cmd) };
        Box::pin(self.to_owner(key, move |mut connection, route| async move {
            connection.route_command(cmd.clone(), RoutingInfo::SingleNode(route)).await
        }))
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        let Some(key) = pipeline.cmd_iter().next().and_then(routing_key) else {
            return self.connection.req_packed_commands(pipeline, offset, count);
        };
        Box::pin(self.to_owner(key, move |mut connection, route| async move {
            connection.route_pipeline(pipeline.clone(), offset, count, route).await
        }))
    }

    fn get_db(&self) -> i64 {
        self.connection.get_db()
    }
}

/// The key a module command names first, its routing key; `None` for
/// other commands and the module's keyless ones.
fn routing_key(cmd: &Cmd) -> Option<&[u8]> {
    let mut args = cmd.args_iter().map(|arg| match arg {
        Arg::Simple(arg) => arg,
        _ => &[],
    });
    let verb = args.next()?;
    let keyed = verb.contains(&b'.') && !KEYLESS.iter().any(|keyless| verb.eq_ignore_ascii_case(keyless));
    args.next().filter(|_| keyed)
}

/// Commands grouped by node, each with the commands' original indexes.
struct Split {
    pipelines: HashMap<Node, (Pipeline, Vec<usize>)>,
    /// Commands whose key has no known owner.
    unowned: Vec<usize>,
}

fn split_by_owner(commands: Vec<(Vec<u8>, Cmd)>, owner: impl Fn(&[u8]) -> Option<Node>) -> Split {
    let mut split = Split { pipelines: HashMap::new(), unowned: Vec::new() };
    for (index, (key, cmd)) in commands.into_iter().enumerate() {
        match owner(&key) {
            Some(node) => {
                let (pipe, indexes) = split.pipelines.entry(node).or_insert_with(|| (redis::pipe(), Vec::new()));
                pipe.add_command(cmd);
                indexes.push(index);
            }
            None => split.unowned.push(index),
        }
    }
    split
}

/// One reply per command, in the original order, from each pipeline's
/// `(indexes, replies)`: a failed pipeline fails its own commands only.
fn merge(count: usize, answers: Vec<(Vec<usize>, RedisResult<Vec<Value>>)>) -> Vec<RedisResult<Value>> {
    let mut replies: Vec<Option<RedisResult<Value>>> = (0..count).map(|_| None).collect();
    let mut set = |index: usize, reply| {
        if let Some(slot) = replies.get_mut(index) {
            *slot = Some(reply);
        }
    };
    for (indexes, answer) in answers {
        match answer {
            Ok(values) => indexes.into_iter().zip(values).for_each(|(index, value)| match value {
                Value::ServerError(err) => set(index, Err(err.into())),
                value => set(index, Ok(value)),
            }),
            Err(err) => indexes.into_iter().for_each(|index| set(index, Err(err.clone()))),
        }
    }
    let unanswered = || Err(RedisError::from((ErrorKind::Io, "no reply from the command's node")));
    replies.into_iter().map(|reply| reply.unwrap_or_else(unanswered)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(port: u16) -> Node {
        Node { host: "127.0.0.1".into(), port }
    }

    #[test]
    fn commands_split_by_owner_keep_their_indexes() {
        let commands = ["a1", "b1", "nobody", "a2", "b2", "a3"]
            .into_iter()
            .map(|key| (key.as_bytes().to_vec(), redis::cmd("GET").arg(key).clone()))
            .collect();
        let split = split_by_owner(commands, |key| match key.first() {
            Some(b'a') => Some(node(7000)),
            Some(b'b') => Some(node(7001)),
            _ => None,
        });
        let indexes = |port| split.pipelines[&node(port)].1.clone();
        assert_eq!(indexes(7000), vec![0, 3, 5]);
        assert_eq!(indexes(7001), vec![1, 4]);
        assert_eq!(split.pipelines[&node(7000)].0.cmd_iter().count(), 3);
        assert_eq!(split.unowned, vec![2]);
    }

    #[test]
    fn module_commands_are_routed_by_their_first_key() {
        let key = |args: &[&str]| {
            let mut cmd = redis::cmd(args[0]);
            for arg in &args[1..] {
                cmd.arg(*arg);
            }
            routing_key(&cmd).map(<[u8]>::to_vec)
        };
        assert_eq!(key(&["RLOCK.ACQUIRE", "orders", "owner", "30000"]), Some(b"orders".to_vec()));
        assert_eq!(key(&["rfair.renew", "jobs", "owner"]), Some(b"jobs".to_vec()));
        assert_eq!(key(&["WAIT", "1", "100"]), None, "not a module command");
        assert_eq!(key(&["RLOCK.LIST", "0", "MATCH", "x"]), None, "keyless");
        assert_eq!(key(&["RLOCK.WAITERS"]), None);
    }

    #[test]
    fn replies_merge_by_index_and_a_failed_node_fails_its_commands_only() {
        let wrongtype = redis::parse_redis_value(b"-WRONGTYPE not a lock\r\n").unwrap();
        let answers = vec![
            (vec![0, 3], Ok(vec![Value::Int(1), Value::Int(0)])),
            (vec![1, 4], Err(timed_out(node(7001)))),
            (vec![2, 5], Ok(vec![Value::Int(7), wrongtype])),
        ];
        let replies = merge(7, answers);
        assert_eq!(replies.len(), 7);
        assert_eq!(replies[0].as_ref().unwrap(), &Value::Int(1));
        assert_eq!(replies[3].as_ref().unwrap(), &Value::Int(0));
        assert_eq!(replies[2].as_ref().unwrap(), &Value::Int(7));
        assert!(replies[1].as_ref().unwrap_err().is_timeout());
        assert!(replies[4].as_ref().unwrap_err().is_timeout());
        assert_eq!(replies[5].as_ref().unwrap_err().code(), Some("WRONGTYPE"));
        assert!(replies[6].is_err(), "a command no pipeline answered");
    }
}
