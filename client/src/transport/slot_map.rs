//! Which primary serves each cluster slot, as this client last read it
//! from CLUSTER SLOTS, so that the watchdog can split its commands per
//! node without asking every round, and so that key commands for a slot
//! whose owner changed go to the new owner before redis-rs learns of it
//! (redis-rs reads its own map again only on a redirect, which a hung old
//! primary never sends).

use crate::transport::handback::Handback;
use crate::transport::node_connections::NodeConnections;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{MultipleNodeRoutingInfo, ResponsePolicy, RoutingInfo};
use redis::{ConnectionInfo, RedisError, RedisResult, Value};
use std::collections::HashSet;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::time::Instant;

/// A refresh asks this many nodes at once and takes the first answer, so
/// that one hung node cannot hold it up.
const REFRESH_FAN_OUT: usize = 3;

/// Redirects redis-rs follows by itself never reach us: a map this old is
/// read again even when nothing failed.
const MAX_AGE: Duration = Duration::from_secs(60);

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

/// Cluster slots: 0 to 16383.
const SLOTS: usize = 16384;

/// Slot ranges with their primary and replicas.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct SlotMap(Vec<SlotRange>);

#[derive(Debug, PartialEq)]
struct SlotRange {
    start: u16,
    end: u16,
    primary: Node,
    replicas: Vec<Node>,
}

impl SlotMap {
    /// Parses a CLUSTER SLOTS reply: `[start, end, [host, port, ...], replicas...]` per range.
    pub fn parse(reply: Value) -> RedisResult<Self> {
        let invalid = || RedisError::from((redis::ErrorKind::Parse, "unexpected CLUSTER SLOTS reply"));
        let ranges: Vec<Vec<Value>> = redis::from_redis_value(reply)?;
        let node = |value: &Value| -> Option<Node> {
            let fields: Vec<Value> = redis::from_redis_value(value.clone()).ok()?;
            let host: String = redis::from_redis_value(fields.first()?.clone()).ok()?;
            let port: u16 = redis::from_redis_value(fields.get(1)?.clone()).ok()?;
            Some(Node { host, port })
        };
        let slot = |value: Option<&Value>| value.and_then(|v| redis::from_redis_value::<u16>(v.clone()).ok());
        ranges
            .iter()
            .map(|range| {
                Some(SlotRange {
                    start: slot(range.first())?,
                    end: slot(range.get(1))?,
                    primary: node(range.get(2)?)?,
                    replicas: range.iter().skip(3).filter_map(node).collect(),
                })
            })
            .collect::<Option<_>>()
            .map(SlotMap)
            .ok_or_else(invalid)
    }

    /// The primary serving `slot`, if any.
    pub fn owner(&self, slot: u16) -> Option<&Node> {
        self.0.iter().find(|range| range.start <= slot && slot <= range.end).map(|range| &range.primary)
    }

    /// The range holding `slot`, as `(start, end)`.
    fn range_of(&self, slot: u16) -> Option<(u16, u16)> {
        self.0.iter().find(|range| range.start <= slot && slot <= range.end).map(|range| (range.start, range.end))
    }

    /// Every primary, once each, in slot order.
    pub fn primaries(&self) -> Vec<Node> {
        let mut seen = HashSet::new();
        self.0.iter().map(|range| &range.primary).filter(|node| seen.insert(*node)).cloned().collect()
    }

    /// Nodes to ask for a fresh map: primaries first, then replicas, the
    /// nodes that just failed left out.
    fn refresh_candidates(&self, failed: &HashSet<Node>) -> Vec<Node> {
        let primaries = self.0.iter().map(|range| &range.primary);
        let replicas = self.0.iter().flat_map(|range| &range.replicas);
        let mut seen = HashSet::new();
        primaries
            .chain(replicas)
            .filter(|node| !failed.contains(*node) && seen.insert(*node))
            .take(REFRESH_FAN_OUT)
            .cloned()
            .collect()
    }
}

/// The slot map shared by a client's connections to a cluster, read again
/// on first use, after a node failed or a key had no known owner, and when
/// it is old; and the client's own connections to single nodes.
pub(crate) struct SlotMapCache {
    state: Arc<Mutex<CacheState>>,
    pub nodes: Arc<NodeConnections>,
    handback: Handback,
}

#[derive(Default)]
struct CacheState {
    map: Option<(Arc<SlotMap>, Instant)>,
    stale: bool,
    /// Nodes whose pipelines failed in the last round: not asked first.
    failed: HashSet<Node>,
    /// Slots whose key commands this client routes by its own map, not by
    /// redis-rs's: those whose owner it saw change, and those whose node
    /// kept a caller waiting.
    rerouted: SlotSet,
    /// Slots whose node kept a caller waiting since the last read: their
    /// ranges are rerouted once the map is read again.
    suspects: Vec<u16>,
}

/// A set of slots.
struct SlotSet(Box<[bool]>);

impl Default for SlotSet {
    fn default() -> Self {
        Self(vec![false; SLOTS].into_boxed_slice())
    }
}

impl SlotSet {
    fn contains(&self, slot: u16) -> bool {
        self.0.get(usize::from(slot)).copied().unwrap_or(false)
    }

    fn set_range(&mut self, (start, end): (u16, u16), value: bool) {
        let end = usize::from(end).min(SLOTS - 1);
        self.0.iter_mut().take(end + 1).skip(usize::from(start)).for_each(|slot| *slot = value);
    }

    fn any_in(&self, (start, end): (u16, u16)) -> bool {
        (start..=end).any(|slot| self.contains(slot))
    }
}

impl CacheState {
    /// Takes a freshly read map: the slots whose owner changed since the
    /// last one because that owner failed (not an ordinary reshard, which
    /// redis-rs follows by its redirects), and the ranges of the suspect
    /// slots, are rerouted. Returns the rerouted ranges.
    fn replace(&mut self, map: Arc<SlotMap>) -> Vec<(u16, u16)> {
        if let Some((old, _)) = &self.map {
            for slot in 0..SLOTS as u16 {
                let owner = old.owner(slot);
                if owner != map.owner(slot) && owner.is_some_and(|owner| self.failed.contains(owner)) {
                    self.rerouted.set_range((slot, slot), true);
                }
            }
        }
        for slot in std::mem::take(&mut self.suspects) {
            if let Some(range) = map.range_of(slot) {
                self.rerouted.set_range(range, true);
            }
        }
        self.map = Some((map.clone(), Instant::now()));
        self.stale = false;
        map.0.iter().map(|range| (range.start, range.end)).filter(|range| self.rerouted.any_in(*range)).collect()
    }
}

impl SlotMapCache {
    /// `template`: a seed node's settings, for the connections to single nodes.
    pub fn new(template: Option<ConnectionInfo>) -> Self {
        let nodes = Arc::new(NodeConnections::new(template));
        Self { state: Arc::default(), nodes, handback: Handback::default() }
    }

    /// The map, refreshed first when needed (within `timeout`). A failed
    /// refresh falls back on the old map, and is tried again next time.
    pub async fn get(&self, connection: &ClusterConnection, timeout: Duration) -> RedisResult<Arc<SlotMap>> {
        let (current, candidates) = {
            let state = self.state();
            let current = state.map.as_ref().map(|(map, _)| map.clone());
            let fresh = state.map.as_ref().is_some_and(|(_, read_at)| read_at.elapsed() < MAX_AGE);
            if let Some(map) = current.as_ref().filter(|_| fresh && !state.stale) {
                return Ok(map.clone());
            }
            let candidates = current.as_ref().map(|map| map.refresh_candidates(&state.failed)).unwrap_or_default();
            (current, candidates)
        };
        let error = match read_slot_map(connection, &self.nodes, candidates, timeout).await {
            Ok(map) => {
                let map = Arc::new(map);
                let rerouted = self.state().replace(map.clone());
                let state = Arc::downgrade(&self.state);
                self.handback.probe(connection, rerouted, timeout, move |range| {
                    if let Some(state) = state.upgrade() {
                        state.lock().unwrap_or_else(PoisonError::into_inner).rerouted.set_range(range, false);
                    }
                });
                return Ok(map);
            }
            Err(err) => err,
        };
        current.ok_or(error)
    }

    /// What the last round saw: the nodes that failed, and whether some
    /// key had no owner. Either makes the next round read the map again.
    pub fn report(&self, failed: HashSet<Node>, unowned_keys: bool) {
        let mut state = self.state();
        state.stale |= unowned_keys || !failed.is_empty();
        state.failed = failed;
    }

    /// The owner of `slot` by the map as last read, not read again.
    pub fn owner(&self, slot: u16) -> Option<Node> {
        self.state().map.as_ref().and_then(|(map, _)| map.owner(slot).cloned())
    }

    /// Where a key command for `slot` goes: the slot's owner by this map
    /// once the slot is rerouted, else `None` (redis-rs's routing).
    pub fn route(&self, slot: u16) -> Option<Node> {
        let state = self.state();
        let (map, _) = state.map.as_ref().filter(|_| state.rerouted.contains(slot))?;
        map.owner(slot).cloned()
    }

    /// A caller gave up waiting for `slot`'s node: the map is read again
    /// (its owner by this map asked last), and from then on the slot's
    /// range goes by it.
    pub fn suspect(&self, slot: u16) {
        let mut state = self.state();
        state.stale = true;
        state.suspects.push(slot);
        if let Some(owner) = state.map.as_ref().and_then(|(map, _)| map.owner(slot).cloned()) {
            state.failed.insert(owner);
        }
    }

    /// A node answered MOVED or ASK for `slot`, routed by this map: its
    /// range goes by redis-rs's routing again (which follows the redirect
    /// and learns from it), and the map is read again.
    pub fn redirected(&self, slot: u16) {
        let mut state = self.state();
        state.stale = true;
        if let Some(range) = state.map.as_ref().and_then(|(map, _)| map.range_of(slot)) {
            state.rerouted.set_range(range, false);
        }
    }

    /// Whether `node` owns, by this map, a slot that this client routes by
    /// it: redis-rs may not know the node as a primary yet.
    pub fn owns_rerouted(&self, node: &Node) -> bool {
        let state = self.state();
        let Some((map, _)) = state.map.as_ref() else { return false };
        map.0.iter().any(|range| range.primary == *node && state.rerouted.any_in((range.start, range.end)))
    }

    fn state(&self) -> MutexGuard<'_, CacheState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// CLUSTER SLOTS from the first of `candidates` to answer, each asked on
/// this client's own connection to it (redis-rs's reaches primaries only),
/// within `timeout`; from the first of all nodes redis-rs knows when there
/// are none (first use, or they all failed). Each ask runs to its end on
/// its own: a node that fails or does not answer in time loses its
/// connection, so that no later request queues behind the abandoned one.
async fn read_slot_map(
    connection: &ClusterConnection,
    nodes: &Arc<NodeConnections>,
    candidates: Vec<Node>,
    timeout: Duration,
) -> RedisResult<SlotMap> {
    let mut cmd = redis::cmd("CLUSTER");
    cmd.arg("SLOTS");
    if candidates.is_empty() {
        let first_answer =
            RoutingInfo::MultiNode((MultipleNodeRoutingInfo::AllNodes, Some(ResponsePolicy::OneSucceeded)));
        let mut connection = connection.clone();
        let read = tokio::time::timeout(timeout, connection.route_command(cmd, first_answer)).await;
        return SlotMap::parse(read.map_err(|_| timed_out("CLUSTER SLOTS"))??);
    }
    let (answers, mut answered) = tokio::sync::mpsc::unbounded_channel();
    for node in candidates {
        let (nodes, cmd, answers) = (nodes.clone(), cmd.clone(), answers.clone());
        tokio::spawn(async move {
            let read = async { SlotMap::parse(cmd.query_async(&mut nodes.get(&node).await?).await?) };
            let read = tokio::time::timeout(timeout, read).await.unwrap_or_else(|_| Err(timed_out(&node)));
            if read.is_err() {
                nodes.failed(&node);
            }
            let _ = answers.send(read);
        });
    }
    drop(answers);
    let mut last_error = None;
    while let Some(answer) = answered.recv().await {
        match answer {
            Ok(map) => return Ok(map),
            Err(err) => last_error = Some(err),
        }
    }
    Err(last_error.unwrap_or_else(|| (redis::ErrorKind::ClusterConnectionNotFound, "no node to ask").into()))
}

/// The error of a request that got no answer within its timeout.
pub(crate) fn timed_out(what: impl fmt::Display) -> RedisError {
    std::io::Error::new(std::io::ErrorKind::TimedOut, format!("{what}: no reply in time")).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(port: u16) -> Node {
        Node { host: "127.0.0.1".into(), port }
    }

    fn address(port: u16) -> Value {
        let id = Value::BulkString(format!("id-{port}").into_bytes());
        Value::Array(vec![Value::BulkString(b"127.0.0.1".to_vec()), Value::Int(port.into()), id])
    }

    /// Three primaries (7000-7002), each with one replica (port + 100).
    fn map() -> SlotMap {
        let range = |start: i64, end: i64, port: u16| {
            Value::Array(vec![Value::Int(start), Value::Int(end), address(port), address(port + 100)])
        };
        let reply = Value::Array(vec![range(0, 5460, 7000), range(5461, 10922, 7001), range(10923, 16383, 7002)]);
        SlotMap::parse(reply).unwrap()
    }

    #[test]
    fn owners_come_from_the_ranges() {
        let map = map();
        for (slot, port) in [(0, 7000), (5460, 7000), (5461, 7001), (10922, 7001), (10923, 7002), (16383, 7002)] {
            assert_eq!(map.owner(slot), Some(&node(port)), "slot {slot}");
        }
        assert_eq!(SlotMap::default().owner(0), None);
    }

    #[test]
    fn a_malformed_reply_is_an_error() {
        for reply in [Value::Int(1), Value::Array(vec![Value::Array(vec![Value::Int(0), Value::Int(1)])])] {
            assert!(SlotMap::parse(reply.clone()).is_err(), "{reply:?}");
        }
    }

    #[test]
    fn refreshes_ask_primaries_first_and_never_the_nodes_that_just_failed() {
        let map = map();
        assert_eq!(map.refresh_candidates(&HashSet::new()), vec![node(7000), node(7001), node(7002)]);
        let failed = HashSet::from([node(7001)]);
        assert_eq!(map.refresh_candidates(&failed), vec![node(7000), node(7002), node(7100)]);
        let all_primaries = HashSet::from([node(7000), node(7001), node(7002)]);
        assert_eq!(map.refresh_candidates(&all_primaries), vec![node(7100), node(7101), node(7102)]);
    }

    #[test]
    fn slots_go_by_the_clients_map_once_their_failed_owner_changed_or_kept_a_caller_waiting() {
        let cache = SlotMapCache::new(None);
        cache.state().replace(Arc::new(map()));
        assert_eq!(cache.route(0), None, "redis-rs's routing while nothing changed");
        // The replica of 7001 took over its slots: a reshard, 7001 did not fail.
        let range =
            |start: i64, end: i64, port: u16| Value::Array(vec![Value::Int(start), Value::Int(end), address(port)]);
        let promoted = || vec![range(0, 5460, 7000), range(5461, 10922, 7101), range(10923, 16383, 7002)];
        cache.state().replace(Arc::new(SlotMap::parse(Value::Array(promoted())).unwrap()));
        assert_eq!(cache.route(5461), None, "redis-rs follows a reshard's redirects");
        // Or after 7001 failed.
        cache.state().replace(Arc::new(map()));
        cache.report(HashSet::from([node(7001)]), false);
        cache.state().replace(Arc::new(SlotMap::parse(Value::Array(promoted())).unwrap()));
        assert_eq!((cache.route(5461), cache.route(10922)), (Some(node(7101)), Some(node(7101))));
        assert_eq!((cache.route(5460), cache.route(10923)), (None, None), "the other slots as before");
        // A slot whose node kept a caller waiting: its whole range, once read again.
        cache.suspect(0);
        assert!(cache.state().stale && cache.state().failed.contains(&node(7000)));
        cache.state().replace(Arc::new(map()));
        assert_eq!((cache.route(0), cache.route(5460)), (Some(node(7000)), Some(node(7000))));
        assert!(cache.owns_rerouted(&node(7000)) && !cache.owns_rerouted(&node(7002)));
        // A redirect hands the range back to redis-rs.
        cache.redirected(0);
        assert_eq!(cache.route(0), None);
        assert!(!cache.owns_rerouted(&node(7000)));
    }
}
