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

/// Sends `cmd` once to the server of `key`.
pub(crate) async fn query<T: redis::FromRedisValue>(shared: &Shared, key: &[u8], cmd: &Cmd) -> Result<T> {
    Ok(shared.connection.clone().query_for_key(key, cmd.clone()).await?)
}

/// Sends a read, again on transient failures within the retry options.
pub(crate) async fn read<T: redis::FromRedisValue>(shared: &Shared, key: &[u8], cmd: &Cmd) -> Result<T> {
    shared.options.retry.run(Error::is_transient, || query(shared, key, cmd)).await
}
