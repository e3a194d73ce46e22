//! The client's routing in a Redis Cluster, all of it: [`Cluster`] is the
//! one type the rest of the client sees, and it owns the rest (the slot
//! map as the client last read it, shared by its connections:
//! `slot_map_cache.rs`, read by `slot_map.rs`, its rerouted ranges handed
//! back by `handback.rs`; the client's own connections to single nodes:
//! `node_connections.rs`; the watchdog's batches per primary:
//! `pipelines.rs`).
//!
//! A [`Cluster`] is redis-rs's cluster connection, but for the slots the
//! slot map reroutes (see [`SlotMapCache::route`]): those go to their owner by the client's map,
//! on the client's own connection to it, as does everything for a node
//! that owns such slots (redis-rs may not know it yet). Neither that
//! connection nor the main cluster connection has a response timeout; a
//! caller that may give up waiting bounds its own wait and reports the
//! slot ([`Cluster::reroute`]). redis-rs's connection still sends a
//! request again by itself when its connection dropped (and at once after
//! other I/O errors): requests that must run once go by `send_once`.
//!
//! On the client's own connections a MOVED or ASK hands the slot's range
//! back to redis-rs, and the request is sent again through it, which
//! follows the redirect (and learns from it). A redirect means the node
//! ran nothing for the slot. A pipeline is sent again whole: the only
//! pipeline sent here is an acquire and its replica sync `WAIT`
//! (`engine::attempt::acquire_and_wait`), one keyed command, so nothing of
//! it ran but the `WAIT` (a wait, no write), and the `WAIT` must follow
//! the acquire to the node that runs it to count that node's replicas.
//! (A pipeline of several keyed commands, some redirected and some run,
//! would run those twice; none is sent here, and the acquire is
//! idempotent by its request id besides.) Per-node pipelines, whose
//! commands are independent, send again only what was redirected: see
//! `pipelines.rs`.

mod handback;
mod node_connections;
mod pipelines;
mod send_once;
mod slot_map;
mod slot_map_cache;

pub(crate) use self::node_connections::Node;

use self::node_connections::NodeConnections;
use self::slot_map_cache::SlotMapCache;
use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster::ClusterClientBuilder;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{Arg, Cmd, ConnectionInfo, ErrorKind, Pipeline, RedisFuture, RedisResult, Value};
use rlock_protocol::key_slot;
use std::sync::Arc;
use std::time::Duration;

/// The module's commands that name no key first.
const KEYLESS: [&[u8]; 2] = [b"RLOCK.LIST", b"RLOCK.WAITERS"];

/// A cluster's seed nodes, and the slot map every connection of the
/// client to it shares.
#[derive(Clone)]
pub(crate) struct Seeds {
    nodes: Vec<ConnectionInfo>,
    slot_map: Arc<SlotMapCache>,
}

impl Seeds {
    pub fn new(nodes: Vec<ConnectionInfo>) -> Self {
        let slot_map = Arc::new(SlotMapCache::new(nodes.first().cloned()));
        Self { nodes, slot_map }
    }

    pub fn nodes(&self) -> &[ConnectionInfo] {
        &self.nodes
    }

    /// A connection for commands; `response_timeout` overrides redis-rs's.
    pub async fn connect(&self, response_timeout: Option<Duration>) -> RedisResult<Cluster> {
        let mut builder = ClusterClientBuilder::new(self.nodes.clone());
        if let Some(timeout) = response_timeout {
            builder = builder.response_timeout(timeout);
        }
        let connection = builder.build()?.get_async_connection().await?;
        Ok(Cluster { connection, slot_map: self.slot_map.clone(), nodes: self.slot_map.nodes.clone() })
    }
}

/// A cluster connection with the slot map its clones (and the client's
/// other connections to the cluster) share, and the client's own
/// connections to single nodes it sends rerouted commands on: the slot
/// map's, or (replica sync, whose `WAIT`s block their connection) a set
/// of its own.
#[derive(Clone)]
pub(crate) struct Cluster {
    connection: ClusterConnection,
    slot_map: Arc<SlotMapCache>,
    nodes: Arc<NodeConnections>,
}

impl Cluster {
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
}

/// A module command (`RLOCK.ACQUIRE`, `RSEM.RELEASE`…), or a pipeline
/// that starts with one, goes to its key's owner by the client's map when
/// the map reroutes the slot; anything else by redis-rs's routing.
impl ConnectionLike for Cluster {
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
    pub async fn send(self, connection: &mut MultiplexedConnection) -> RedisResult<Reply> {
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

    pub fn single(self) -> RedisResult<Value> {
        match self {
            Reply::Single(value) => Ok(value),
            Reply::Multiple(_) => Err((ErrorKind::Client, "a pipeline's replies for one command").into()),
        }
    }

    pub fn multiple(self) -> RedisResult<Vec<Value>> {
        match self {
            Reply::Multiple(values) => Ok(values),
            Reply::Single(_) => Err((ErrorKind::Client, "one reply for a pipeline").into()),
        }
    }
}

/// The key a module command names first, which redis-rs routes it by;
/// `None` for other commands and the module's keyless ones.
pub(crate) fn routing_key(cmd: &Cmd) -> Option<&[u8]> {
    let mut args = cmd.args_iter().map(|arg| match arg {
        Arg::Simple(arg) => arg,
        _ => &[],
    });
    let verb = args.next()?;
    let keyed = verb.contains(&b'.') && !KEYLESS.iter().any(|keyless| verb.eq_ignore_ascii_case(keyless));
    args.next().filter(|_| keyed)
}
