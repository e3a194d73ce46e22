//! Commands for many keys in a cluster: one batch per primary, each with
//! its own timeout and result, so that a hung or failing node costs its
//! own commands only. Nodes come from a cached slot map.
//!
//! A MOVED or ASK is followed for the redirected command alone. Through
//! redis-rs each command of a batch is sent on its own (its multiplexed
//! connection pipelines them anyway): redis-rs follows a redirect inside a
//! pipeline by sending the whole pipeline to the other node, where the
//! other commands' keys are not (ASKING covers the first command only),
//! so while a slot migrates a pipeline with keys on both sides went back
//! and forth until redis-rs's retries ran out, failing every command in it.
//! On the client's own connections a MOVED or ASK hands the slot's range
//! back to redis-rs, and the redirected commands alone are sent again
//! through it ([`Cluster::follow_redirects`]: the watchdog's commands
//! may run twice). A node some of whose commands still fail or time out,
//! or a key whose slot has no known owner, makes the next call read the
//! slot map again. Failed commands are not retried here: the caller's
//! next round is the retry.

use super::node_connections::Node;
use super::{redirect, routing_key, Cluster, Request};
use crate::transport::{timed_out, NodeReplies};
use redis::aio::ConnectionLike;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::{Cmd, ErrorKind, Pipeline, RedisError, RedisResult, Value};
use rlock_protocol::key_slot;
use std::collections::{HashMap, HashSet};
use std::time::Duration;

impl Cluster {
    /// Runs single-key `(key, command)` pairs, one batch per primary;
    /// `timeout` bounds the slot map refresh and each node's batch.
    pub async fn per_node_pipelines(&self, commands: Vec<(Vec<u8>, Cmd)>, timeout: Duration) -> NodeReplies {
        let count = commands.len();
        let map = match self.slot_map.get(&self.connection, timeout).await {
            Ok(map) => map,
            Err(err) => return NodeReplies::failed(count, err),
        };
        let split = split_by_owner(commands, |key| map.owner(key_slot(key)).cloned());
        let mut pipelines = tokio::task::JoinSet::new();
        for (node, (pipe, indexes)) in split.pipelines {
            let connection = self.connection.clone();
            // A slot's new owner redis-rs may not know yet: on the client's own connection.
            let own = self.slot_map.owns_rerouted(&node).then(|| (self.nodes.clone(), self.clone()));
            pipelines.spawn(async move {
                let sent = async {
                    let Some((nodes, cluster)) = own.clone() else {
                        let route = SingleNodeRoutingInfo::ByAddress { host: node.host.clone(), port: node.port };
                        return Ok(one_by_one(&connection, &pipe, RoutingInfo::SingleNode(route)).await);
                    };
                    let sent = Request::Pipeline(&pipe, 0, indexes.len()).send(&mut nodes.get(&node).await?).await;
                    if sent.as_ref().is_err_and(|err| !err.is_timeout()) {
                        nodes.failed(&node);
                    }
                    Ok(cluster.follow_redirects(&pipe, sent?.multiple()?).await.into_iter().map(Ok).collect())
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
            if result.as_ref().map_or(true, |replies| replies.iter().any(Result::is_err)) {
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
        let redirected = answers.iter().flat_map(|(_, answer)| answer.iter().flatten()).any(|reply| match reply {
            Ok(value) => redirect(value),
            Err(err) => err.redirect_node().is_some(),
        });
        self.slot_map.report(failed, unowned || redirected);
        NodeReplies { replies: merge(count, answers), all_answered }
    }

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

/// Each of `pipe`'s commands through redis-rs on its own, by `route`, all
/// at once: a redirect is followed for the redirected command alone.
async fn one_by_one(connection: &ClusterConnection, pipe: &Pipeline, route: RoutingInfo) -> Vec<RedisResult<Value>> {
    let mut sends = tokio::task::JoinSet::new();
    for (index, cmd) in pipe.cmd_iter().enumerate() {
        let (mut connection, cmd, route) = (connection.clone(), cmd.clone(), route.clone());
        sends.spawn(async move { (index, connection.route_command(cmd, route).await) });
    }
    let mut replies: Vec<RedisResult<Value>> = pipe.cmd_iter().map(|_| Err(unanswered())).collect();
    while let Some(joined) = sends.join_next().await {
        // A send that panicked leaves its command unanswered.
        if let Ok((index, sent)) = joined {
            replies[index] = sent;
        }
    }
    replies
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

/// A node's replies, one per command, or the error that failed them all.
type Answer = RedisResult<Vec<RedisResult<Value>>>;

/// One reply per command, in the original order, from each node's
/// `(indexes, replies)`: a failed node fails its own commands only.
fn merge(count: usize, answers: Vec<(Vec<usize>, Answer)>) -> Vec<RedisResult<Value>> {
    let mut replies: Vec<Option<RedisResult<Value>>> = (0..count).map(|_| None).collect();
    let mut set = |index: usize, reply| {
        if let Some(slot) = replies.get_mut(index) {
            *slot = Some(reply);
        }
    };
    for (indexes, answer) in answers {
        match answer {
            Ok(values) => indexes.into_iter().zip(values).for_each(|(index, value)| match value {
                Ok(Value::ServerError(err)) => set(index, Err(err.into())),
                reply => set(index, reply),
            }),
            Err(err) => indexes.into_iter().for_each(|index| set(index, Err(err.clone()))),
        }
    }
    replies.into_iter().map(|reply| reply.unwrap_or_else(|| Err(unanswered()))).collect()
}

fn unanswered() -> RedisError {
    RedisError::from((ErrorKind::Io, "no reply from the command's node"))
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
            (vec![0, 3], Ok(vec![Ok(Value::Int(1)), Ok(Value::Int(0))])),
            (vec![1, 4], Err(timed_out(node(7001)))),
            (vec![2, 5], Ok(vec![Ok(Value::Int(7)), Ok(wrongtype)])),
            (vec![7], Ok(vec![Err(timed_out(node(7002)))])),
        ];
        let replies = merge(8, answers);
        assert_eq!(replies.len(), 8);
        assert_eq!(replies[0].as_ref().unwrap(), &Value::Int(1));
        assert_eq!(replies[3].as_ref().unwrap(), &Value::Int(0));
        assert_eq!(replies[2].as_ref().unwrap(), &Value::Int(7));
        assert!(replies[1].as_ref().unwrap_err().is_timeout());
        assert!(replies[4].as_ref().unwrap_err().is_timeout());
        assert_eq!(replies[5].as_ref().unwrap_err().code(), Some("WRONGTYPE"));
        assert!(replies[6].is_err(), "a command no node answered");
        assert!(replies[7].as_ref().unwrap_err().is_timeout(), "a command that failed on its own");
    }
}
