//! Sending the synchronizers' commands (semaphores, count-down latch): to
//! the server of their key, reads again on transient failures, writes once.

use crate::error::{Error, Result};
use crate::shared::Shared;
use redis::Cmd;

/// `verb key`.
pub(crate) fn command(verb: &str, key: &[u8]) -> Cmd {
    let mut cmd = redis::cmd(verb);
    cmd.arg(key);
    cmd
}

/// Sends `cmd` once to the server of `key`: nothing sends it again, also
/// in a cluster (see `transport::cluster::send_once`). For writes that must run
/// at most once: a lost reply is the caller's error.
pub(crate) async fn query<T: redis::FromRedisValue>(shared: &Shared, key: &[u8], cmd: &Cmd) -> Result<T> {
    debug_assert!(crate::transport::cluster::routing_key(cmd) == Some(key));
    Ok(cmd.query_async(&mut shared.connection.once(shared.options.cluster_reply_timeout)).await?)
}

/// Sends `cmd` to the server of `key` on the shared connection, which may
/// send it again by itself in a cluster: for requests that may run twice
/// (a read, a renewal).
pub(crate) async fn send<T: redis::FromRedisValue>(shared: &Shared, key: &[u8], cmd: &Cmd) -> Result<T> {
    Ok(shared.connection.clone().query_for_key(key, cmd.clone()).await?)
}

/// Sends a read, again on transient failures within the retry options.
pub(crate) async fn read<T: redis::FromRedisValue>(shared: &Shared, key: &[u8], cmd: &Cmd) -> Result<T> {
    shared.options.retry.run(Error::is_transient, || send(shared, key, cmd)).await
}
