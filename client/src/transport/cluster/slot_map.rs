//! Which primary serves each cluster slot, as CLUSTER SLOTS says, and
//! reading it from the nodes without waiting on a hung one. The map as
//! this client last read it, and which slots it routes by it: see
//! [`SlotMapCache`](super::slot_map_cache::SlotMapCache).

use super::node_connections::{Node, NodeConnections};
use crate::transport::timed_out;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{MultipleNodeRoutingInfo, ResponsePolicy, RoutingInfo};
use redis::{RedisError, RedisResult, Value};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

/// A refresh asks this many nodes at once and takes the first answer, so
/// that one hung node cannot hold it up.
const REFRESH_FAN_OUT: usize = 3;

/// Cluster slots: 0 to 16383.
pub(crate) const SLOTS: usize = 16384;

/// Slot ranges with their primary and replicas.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct SlotMap(pub(crate) Vec<SlotRange>);

#[derive(Debug, PartialEq)]
pub(crate) struct SlotRange {
    pub start: u16,
    pub end: u16,
    pub primary: Node,
    pub replicas: Vec<Node>,
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
    pub fn range_of(&self, slot: u16) -> Option<(u16, u16)> {
        self.0.iter().find(|range| range.start <= slot && slot <= range.end).map(|range| (range.start, range.end))
    }

    /// Every primary, once each, in slot order.
    pub fn primaries(&self) -> Vec<Node> {
        let mut seen = HashSet::new();
        self.0.iter().map(|range| &range.primary).filter(|node| seen.insert(*node)).cloned().collect()
    }

    /// Nodes to ask for a fresh map: primaries first, then replicas, the
    /// nodes that just failed left out.
    pub fn refresh_candidates(&self, failed: &HashSet<Node>) -> Vec<Node> {
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

/// CLUSTER SLOTS from the first of `candidates` to answer, each asked on
/// this client's own connection to it (redis-rs's reaches primaries only),
/// within `timeout`; from the first of all nodes redis-rs knows when there
/// are none (first use, or they all failed). Each ask runs to its end on
/// its own: a node that fails or does not answer in time loses its
/// connection, so that no later request queues behind the abandoned one.
pub(crate) async fn read_slot_map(
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn node(port: u16) -> Node {
        Node { host: "127.0.0.1".into(), port }
    }

    pub(crate) fn address(port: u16) -> Value {
        let id = Value::BulkString(format!("id-{port}").into_bytes());
        Value::Array(vec![Value::BulkString(b"127.0.0.1".to_vec()), Value::Int(port.into()), id])
    }

    /// Three primaries (7000-7002), each with one replica (port + 100).
    pub(crate) fn map() -> SlotMap {
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
}
