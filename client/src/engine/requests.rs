//! Sending the synchronizers' commands (semaphores, count-down latch): to
//! the server of their key, reads again on transient failures, writes once.

use crate::error::Result;
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
    let retry = &shared.options.retry;
    let mut failures = 0;
    loop {
        match query(shared, key, cmd).await {
            Err(err) if err.is_transient() && failures < retry.attempts => {
                failures += 1;
                tokio::time::sleep(retry.delay).await;
            }
            reply => return reply,
        }
    }
}
