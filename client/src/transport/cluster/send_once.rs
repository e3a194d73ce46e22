//! Requests that must run at most once: a release without an unlock latch,
//! a force release, an acquire that carries neither a request id nor the
//! owner's count, the synchronizers' writes (a semaphore's release or take,
//! a count-down…). Nothing on the way may send one again once it may have
//! reached the server: a second run could drop another level, delete a
//! lock someone took since, or count twice.
//!
//! On one server and through Sentinel the shared connection already sends
//! each request once (a dropped connection fails what was in flight; the
//! caller gets the error). redis-rs's cluster connection does not: it sends
//! a request again by itself when its connection dropped, and at once after
//! other I/O errors, whether or not the server ran it. So in a cluster
//! such a request goes on the client's own connection to its key's owner
//! by the client's slot map (`NodeConnections`,
//! which never sends anything again), and a `MOVED` or `ASK` is followed
//! here, to the node it names (`ASKING` in the same pipeline): a redirect
//! means the node ran nothing. A failed connection is dropped and the map
//! read again before the next request; the caller gets the error. (A
//! connection found closed before the request was given to it is replaced
//! first: see `NodeConnections::get`.)

use super::{redirect, routing_key, Cluster, Node, Reply, Request};
use crate::transport::connection::Connection;
use redis::aio::ConnectionLike;
use redis::{Cmd, ErrorKind, Pipeline, RedisError, RedisFuture, RedisResult, Value};
use rlock_protocol::key_slot;
use std::time::Duration;

/// Redirects followed for one request before its last one is the reply
/// (a slot migrating back and forth).
const MAX_REDIRECTS: usize = 5;

impl Connection {
    /// This connection for requests that must run at most once (see the
    /// module docs); `map_timeout` bounds reading a cluster's slot map.
    pub fn once(&self, map_timeout: Duration) -> Once {
        Once { connection: self.clone(), map_timeout }
    }
}

/// A connection that sends each request at most once; see [`Connection::once`].
pub(crate) struct Once {
    connection: Connection,
    map_timeout: Duration,
}

impl ConnectionLike for Once {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        let map_timeout = self.map_timeout;
        match &mut self.connection {
            Connection::Cluster(cluster) => {
                Box::pin(async move { cluster.send_once(Request::Cmd(cmd), map_timeout).await?.single() })
            }
            connection => connection.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        let map_timeout = self.map_timeout;
        match &mut self.connection {
            Connection::Cluster(cluster) => Box::pin(async move {
                cluster.send_once(Request::Pipeline(pipeline, offset, count), map_timeout).await?.multiple()
            }),
            connection => connection.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        self.connection.get_db()
    }
}

impl Cluster {
    /// Sends `request` once, to the owner of its key's slot by the slot map
    /// (read first, within `map_timeout`, when it is stale), on this
    /// client's own connection to it, following `MOVED` and `ASK`. A
    /// pipeline's first command names the key, and only its reply is
    /// looked at for a redirect: a pipeline sent here has one keyed
    /// command, first (an acquire, and replica sync's `WAIT`).
    async fn send_once(&self, request: Request<'_>, map_timeout: Duration) -> RedisResult<Reply> {
        let first = match request {
            Request::Cmd(cmd) => Some(cmd),
            Request::Pipeline(pipeline, ..) => pipeline.cmd_iter().next(),
        };
        let slot = first
            .and_then(routing_key)
            .map(key_slot)
            .ok_or_else(|| RedisError::from((ErrorKind::Client, "a request sent once must name its key first")))?;
        if matches!(request, Request::Pipeline(pipeline, ..) if pipeline.is_transaction()) {
            return Err((ErrorKind::Client, "a transaction cannot be sent once").into());
        }
        let map = self.slot_map.get(&self.connection, map_timeout).await?;
        let mut node = map.owner(slot).cloned().ok_or_else(|| {
            self.slot_map.refresh();
            RedisError::from((ErrorKind::ClusterConnectionNotFound, "no known primary for the slot"))
        })?;
        let mut asking = false;
        for _ in 0..MAX_REDIRECTS {
            let sent = match self.nodes.get(&node).await {
                Ok(mut connection) => send(&mut connection, request, asking).await,
                Err(err) => Err(err),
            };
            let reply = match sent {
                Ok(reply) => reply,
                Err(err) => {
                    // A hung node's connection stays: a caller bounds its own wait.
                    if !err.is_timeout() {
                        self.nodes.failed(&node);
                        self.slot_map.refresh();
                    }
                    return Err(err);
                }
            };
            let Some((moved, target)) = redirected_to(&reply) else { return Ok(reply) };
            if moved {
                // The slot's range goes by redis-rs's routing again, and the map is read again.
                self.slot_map.redirected(slot);
            }
            (node, asking) = (target, !moved);
        }
        Err((ErrorKind::Client, "a request sent once was redirected too many times").into())
    }
}

/// Sends `request` on `connection`, after `ASKING` in the same pipeline
/// when `asking` (so that no other request on the connection comes between).
async fn send(
    connection: &mut redis::aio::MultiplexedConnection,
    request: Request<'_>,
    asking: bool,
) -> RedisResult<Reply> {
    if !asking {
        return request.send(connection).await;
    }
    let mut pipe = redis::pipe();
    pipe.cmd("ASKING");
    let (offset, count) = match request {
        Request::Cmd(cmd) => {
            pipe.add_command(cmd.clone());
            (1, 1)
        }
        Request::Pipeline(pipeline, offset, count) => {
            pipeline.cmd_iter().for_each(|cmd| {
                pipe.add_command(cmd.clone());
            });
            (offset + 1, count)
        }
    };
    let mut replies = connection.req_packed_commands(&pipe, offset, count).await?;
    Ok(match request {
        Request::Cmd(_) => Reply::Single(replies.pop().unwrap_or(Value::Nil)),
        Request::Pipeline(..) => Reply::Multiple(replies),
    })
}

/// Where a redirect in `reply` (its first command's, for a pipeline) sends
/// the request: `(true, node)` for `MOVED`, `(false, node)` for `ASK`.
fn redirected_to(reply: &Reply) -> Option<(bool, Node)> {
    let value = match reply {
        Reply::Single(value) => value,
        Reply::Multiple(values) => values.first()?,
    };
    if !redirect(value) {
        return None;
    }
    let Value::ServerError(err) = value.clone() else { return None };
    let moved = err.code() == "MOVED";
    let err = RedisError::from(err);
    let (address, _) = err.redirect_node()?;
    let (host, port) = address.rsplit_once(':')?;
    Some((moved, Node { host: host.to_owned(), port: port.parse().ok()? }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(line: &str) -> Reply {
        Reply::Single(redis::parse_redis_value(line.as_bytes()).unwrap())
    }

    #[test]
    fn redirects_name_the_node_to_send_to() {
        let node = |port| Node { host: "127.0.0.1".into(), port };
        let cases = [
            ("-MOVED 3999 127.0.0.1:6381\r\n", Some((true, node(6381)))),
            ("-ASK 3999 127.0.0.1:6382\r\n", Some((false, node(6382)))),
            ("-ERR no such key\r\n", None),
            (":1\r\n", None),
        ];
        for (line, expected) in cases {
            assert_eq!(redirected_to(&reply(line)), expected, "{line:?}");
        }
        let pipeline = |first: &str, second: &str| {
            let parse = |line: &str| redis::parse_redis_value(line.as_bytes()).unwrap();
            Reply::Multiple(vec![parse(first), parse(second)])
        };
        assert_eq!(
            redirected_to(&pipeline("-ASK 1 10.0.0.2:7000\r\n", ":0\r\n")),
            Some((false, Node { host: "10.0.0.2".into(), port: 7000 }))
        );
        assert_eq!(redirected_to(&pipeline(":1\r\n", "-MOVED 1 10.0.0.2:7000\r\n")), None);
    }
}
