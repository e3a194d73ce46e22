//! Commands for many keys in a cluster: one pipeline per primary, each
//! with its own timeout and result, so that a hung or failing node costs
//! its own commands only. Nodes come from a cached slot map.
//!
//! redis-rs follows MOVED and ASK replies inside a pipeline by itself
//! (and refreshes its own map); on the client's own connections a MOVED or
//! ASK hands the slot's range back to redis-rs, and the command is sent
//! again through it ([`ClusterNodes::follow_redirects`]: the watchdog's
//! commands may run twice). A node whose pipeline still fails, or a
//! key whose slot has no known owner, makes the next call read the slot
//! map again. Failed commands are not retried here: the caller's next
//! round is the retry.
//!
//! Key commands go by redis-rs's routing, but for the slots the slot map
//! reroutes (see [`SlotMapCache::route`]): those go to their owner by the
//! client's map, on the client's own connection to it, as does everything
//! for a node that owns such slots (redis-rs may not know it yet). Neither
//! that connection nor the main cluster connection has a response timeout,
//! so nothing is ever sent again by itself; a caller that may give up
//! waiting bounds its own wait and reports the slot
//! ([`ClusterNodes::reroute`]).

use crate::transport::connection::{key_slot, NodeReplies};
use crate::transport::node_connections::NodeConnections;
use crate::transport::slot_map::{timed_out, Node};
use crate::transport::slot_map_cache::SlotMapCache;
use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{Arg, Cmd, ErrorKind, Pipeline, RedisError, RedisFuture, RedisResult, Value};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

/// The module's commands that name no key first.
const KEYLESS: [&[u8]; 2] = [b"RLOCK.LIST", b"RLOCK.WAITERS"];

/// A cluster connection with the slot map its clones (and the client's
/// other connections to the cluster) share, and the client's own
/// connections to single nodes it sends rerouted commands on: the slot
/// map's, or (replica sync, whose `WAIT`s block their connection) a set
/// of its own.
#[derive(Clone)]
pub(crate) struct ClusterNodes {
    pub connection: ClusterConnection,
    slot_map: Arc<SlotMapCache>,
    nodes: Arc<NodeConnections>,
}

impl ClusterNodes {
    pub fn new(connection: ClusterConnection, slot_map: Arc<SlotMapCache>, nodes: Arc<NodeConnections>) -> Self {
        Self { connection, slot_map, nodes }
    }

    /// The same cluster connection with the client's own connections to
    /// single nodes apart from this one's (see [`NodeConnections::apart`]).
    pub fn apart(self) -> Self {
        let nodes = Arc::new(self.nodes.apart());
        Self { nodes, ..self }
    }

    /// The owner of `slot` by the slot map as last read (none read yet: `None`).
    pub fn known_owner(&self, slot: u16) -> Option<Node> {
        self.slot_map.owner(slot)
    }

    /// Runs `cmd` on the primary of `key`'s slot.
    pub async fn query_for_key<T: redis::FromRedisValue>(&self, key: &[u8], cmd: Cmd) -> RedisResult<T> {
        let slot = key_slot(key);
        if let Some(sent) = self.send_rerouted(slot, Request::Cmd(&cmd)).await {
            return Ok(redis::from_redis_value(sent?.single()?.extract_error()?)?);
        }
        let route = SingleNodeRoutingInfo::SpecificNode(Route::new(slot, SlotAddr::Master));
        Ok(redis::from_redis_value(self.connection.clone().route_command(cmd, RoutingInfo::SingleNode(route)).await?)?)
    }

    /// A caller gave up waiting for the node of `key`'s slot: reads the
    /// slot map again (within `timeout`, from the other nodes first), and
    /// from then on sends the slot's commands to the owner it names (a
    /// promoted replica once a node names it).
    /// The request went on this client's own connection to the node (the
    /// slot was rerouted already): that connection is dropped, so that the
    /// next requests do not queue behind the abandoned one.
    pub async fn reroute(&self, key: &[u8], timeout: Duration) {
        let slot = key_slot(key);
        if let Some(node) = self.slot_map.route(slot) {
            self.nodes.failed(&node);
        }
        self.slot_map.suspect(slot);
        let _ = self.slot_map.get(&self.connection, timeout).await;
    }

    /// Sends `request`, for `slot`, on this client's own connection to the
    /// slot's owner by its map, when the map reroutes the slot; `None`
    /// when it does not, or when the owner answered MOVED or ASK (nothing
    /// ran: the caller sends it by redis-rs's routing, which follows).
    async fn send_rerouted(&self, slot: u16, request: Request<'_>) -> Option<RedisResult<Reply>> {
        let node = self.slot_map.route(slot)?;
        let sent = match self.nodes.get(&node).await {
            Ok(mut connection) => request.send(&mut connection).await,
            Err(err) => Err(err),
        };
        match &sent {
            Ok(reply) if reply.redirected() => {
                self.slot_map.redirected(slot);
                return None;
            }
            Err(err) if !err.is_timeout() => {
                self.nodes.failed(&node);
                self.slot_map.suspect(slot);
            }
            _ => {}
        }
        Some(sent)
    }

    /// The primaries, from the slot map (read again when stale).
    pub async fn primaries(&self, timeout: Duration) -> RedisResult<Vec<Node>> {
        Ok(self.slot_map.get(&self.connection, timeout).await?.primaries())
    }

    /// Runs `cmd` on `node`.
    pub async fn query_on<T: redis::FromRedisValue>(&self, node: &Node, cmd: Cmd) -> RedisResult<T> {
        if self.slot_map.owns_rerouted(node) {
            return cmd.query_async(&mut self.nodes.get(node).await?).await;
        }
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
            // A slot's new owner redis-rs may not know yet: on the client's own connection.
            let own = self.slot_map.owns_rerouted(&node).then(|| (self.nodes.clone(), self.clone()));
            pipelines.spawn(async move {
                let sent = async {
                    let Some((nodes, cluster)) = own.clone() else {
                        let route = SingleNodeRoutingInfo::ByAddress { host: node.host.clone(), port: node.port };
                        return connection.route_pipeline(pipe, 0, indexes.len(), route).await;
                    };
                    let sent = Request::Pipeline(&pipe, 0, indexes.len()).send(&mut nodes.get(&node).await?).await;
                    if sent.as_ref().is_err_and(|err| !err.is_timeout()) {
                        nodes.failed(&node);
                    }
                    Ok(cluster.follow_redirects(&pipe, sent?.multiple()?).await)
                };
                let result = tokio::time::timeout(timeout, sent).await.unwrap_or_else(|_| {
                    // Abandoned: the next round does not queue behind it.
                    if let Some((nodes, _)) = &own {
                        nodes.failed(&node);
                    }
                    Err(timed_out(&node))
                });
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
        // A redirect left (redis-rs failed to follow it): the map is stale.
        let redirected =
            answers.iter().any(|(_, answer)| answer.as_ref().is_ok_and(|values| values.iter().any(redirect)));
        self.slot_map.report(failed, unowned || redirected);
        NodeReplies { replies: merge(count, answers), all_answered }
    }
}

impl ClusterNodes {
    /// `replies` to `pipe`, sent on the client's own connection to a node,
    /// with each MOVED or ASK among them replaced by the command's reply
    /// through redis-rs, which follows the redirect (and learns from it);
    /// the redirected slots go by redis-rs's routing again. Only for
    /// commands that may run twice (the watchdog's renewals and checks):
    /// one that failed through redis-rs keeps its redirect, an error.
    async fn follow_redirects(&self, pipe: &Pipeline, mut replies: Vec<Value>) -> Vec<Value> {
        let mut resends = tokio::task::JoinSet::new();
        for (index, cmd) in pipe.cmd_iter().enumerate() {
            if !replies.get(index).is_some_and(redirect) {
                continue;
            }
            if let Some(slot) = routing_key(cmd).map(key_slot) {
                self.slot_map.redirected(slot);
            }
            let (mut connection, cmd) = (self.connection.clone(), cmd.clone());
            resends.spawn(async move { (index, connection.req_packed_command(&cmd).await) });
        }
        while let Some(Ok((index, resent))) = resends.join_next().await {
            if let (Ok(value), Some(reply)) = (resent, replies.get_mut(index)) {
                *reply = value;
            }
        }
        replies
    }
}

/// A module command (`RLOCK.ACQUIRE`, `RSEM.RELEASE`…), or a pipeline
/// that starts with one, goes to its key's owner by the client's map when
/// the map reroutes the slot; anything else by redis-rs's routing.
impl ConnectionLike for ClusterNodes {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        let Some(slot) = routing_key(cmd).map(key_slot) else { return self.connection.req_packed_command(cmd) };
        Box::pin(async move {
            match self.send_rerouted(slot, Request::Cmd(cmd)).await {
                Some(sent) => sent?.single(),
                None => self.connection.req_packed_command(cmd).await,
            }
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        let Some(slot) = pipeline.cmd_iter().next().and_then(routing_key).map(key_slot) else {
            return self.connection.req_packed_commands(pipeline, offset, count);
        };
        Box::pin(async move {
            match self.send_rerouted(slot, Request::Pipeline(pipeline, offset, count)).await {
                Some(sent) => sent?.multiple(),
                None => self.connection.req_packed_commands(pipeline, offset, count).await,
            }
        })
    }

    fn get_db(&self) -> i64 {
        self.connection.get_db()
    }
}

/// MOVED or ASK: the node does not serve the slot (now), and ran nothing.
fn redirect(value: &Value) -> bool {
    matches!(value, Value::ServerError(err) if matches!(err.code(), "MOVED" | "ASK"))
}

/// A command or a pipeline (its offset and count) for one node.
#[derive(Clone, Copy)]
enum Request<'a> {
    Cmd(&'a Cmd),
    Pipeline(&'a Pipeline, usize, usize),
}

/// Its reply.
enum Reply {
    Single(Value),
    Multiple(Vec<Value>),
}

impl Request<'_> {
    async fn send(self, connection: &mut MultiplexedConnection) -> RedisResult<Reply> {
        Ok(match self {
            Request::Cmd(cmd) => Reply::Single(connection.req_packed_command(cmd).await?),
            Request::Pipeline(pipeline, offset, count) => {
                Reply::Multiple(connection.req_packed_commands(pipeline, offset, count).await?)
            }
        })
    }
}

impl Reply {
    /// A redirect (see [`redirect`]) among the replies.
    fn redirected(&self) -> bool {
        match self {
            Reply::Single(value) => redirect(value),
            Reply::Multiple(values) => values.iter().any(redirect),
        }
    }

    fn single(self) -> RedisResult<Value> {
        match self {
            Reply::Single(value) => Ok(value),
            Reply::Multiple(_) => Err((ErrorKind::Client, "a pipeline's replies for one command").into()),
        }
    }

    fn multiple(self) -> RedisResult<Vec<Value>> {
        match self {
            Reply::Multiple(values) => Ok(values),
            Reply::Single(_) => Err((ErrorKind::Client, "one reply for a pipeline").into()),
        }
    }
}

/// The key a module command names first, which redis-rs routes it by;
/// `None` for other commands and the module's keyless ones.
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
