//! Deleting unlock latch keys once their release's reply is in (Redisson
//! sends `DEL` fire-and-forget). One background task deletes them in
//! batches, one `DEL` per server, so a release spawns no task and, under
//! load, costs a fraction of a command. A latch that is never deleted (the
//! client closed, the server failed) expires with its lifetime.

use crate::transport::connection::Connection;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::{watch, Notify};

/// Longest one batch may take before the sweeper moves on.
const BATCH_TIMEOUT: Duration = Duration::from_secs(1);

/// How long the sweeper gathers keys once woken: a latch lives for
/// seconds, and one wake-up and one `DEL` per gathering, not per release,
/// is what keeps the sweeper off the releases' path under load.
const GATHER: Duration = Duration::from_millis(5);

#[derive(Default)]
pub(crate) struct LatchSweeper {
    pending: Mutex<Vec<Vec<u8>>>,
    wake: Notify,
}

impl LatchSweeper {
    /// Starts the task; it stops when `closed` turns true.
    pub fn start(connection: Connection, closed: watch::Receiver<bool>) -> Arc<Self> {
        let sweeper = Arc::new(Self::default());
        tokio::spawn(sweep(sweeper.clone(), connection, closed));
        sweeper
    }

    /// Deletes `latch_key` soon.
    pub fn delete(&self, latch_key: Vec<u8>) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        pending.push(latch_key);
        if pending.len() == 1 {
            self.wake.notify_one();
        }
    }

    fn take(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut *self.pending.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

async fn sweep(sweeper: Arc<LatchSweeper>, mut connection: Connection, mut closed: watch::Receiver<bool>) {
    loop {
        let batch = sweeper.take();
        if batch.is_empty() {
            let closing = tokio::select! {
                _ = sweeper.wake.notified() => false,
                _ = closed.wait_for(|closed| *closed) => true,
            };
            if closing {
                // The last releases' latches, queued as the client closed.
                return delete_batch(&mut connection, sweeper.take()).await;
            }
            tokio::time::sleep(GATHER).await;
            continue;
        }
        delete_batch(&mut connection, batch).await;
    }
}

/// One `DEL` for all on one server; in a cluster, one per key (keys of
/// different slots), pipelined per primary. Failures are left to the
/// latches' expiry.
async fn delete_batch(connection: &mut Connection, batch: Vec<Vec<u8>>) {
    if batch.is_empty() {
        return;
    }
    let commands = if connection.is_cluster() {
        batch.into_iter().map(|key| (key.clone(), delete(&[key]))).collect()
    } else {
        vec![(Vec::new(), delete(&batch))]
    };
    let _ = connection.per_node_pipelines(commands, BATCH_TIMEOUT).await;
}

fn delete(keys: &[Vec<u8>]) -> redis::Cmd {
    let mut del = redis::cmd("DEL");
    keys.iter().for_each(|key| {
        del.arg(key);
    });
    del
}
