//! Commands for many keys in a cluster: one pipeline per primary, each
//! with its own timeout and result, so that a hung or failing node costs
//! its own commands only. Nodes come from a cached slot map.
//!
//! redis-rs follows MOVED and ASK replies inside a pipeline by itself
//! (and refreshes its own map); on the client's own connections a MOVED or
//! ASK hands the slot's range back to redis-rs, and the redirected
//! commands alone are sent again through it
//! ([`ClusterNodes::follow_redirects`]: the watchdog's commands may run
//! twice). A node whose pipeline still fails or times out, or a key whose
//! slot has no known owner, makes the next call read the slot map again.
//! Failed commands are not retried here: the caller's next round is the
//! retry.

use crate::transport::cluster_nodes::{redirect, routing_key, ClusterNodes, Request};
use crate::transport::connection::{key_slot, NodeReplies};
use crate::transport::slot_map::{timed_out, Node};
use redis::aio::ConnectionLike;
use redis::cluster_routing::SingleNodeRoutingInfo;
use redis::{Cmd, ErrorKind, Pipeline, RedisError, RedisResult, Value};
use std::collections::{HashMap, HashSet};
use std::time::Duration;

impl ClusterNodes {
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
