//! The blocking waiting mode's connections ([`crate::engine::blocking`]): at most
//! `size` in use at once, each by one blocking call, opened when first
//! needed. A connection goes back to the pool when its [`Pooled`] is
//! dropped, unless it was discarded: one whose call may still be blocked
//! on the server, killed there.

use redis::aio::MultiplexedConnection;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub(crate) struct BlockingPool {
    redis: redis::Client,
    idle: Arc<Mutex<Vec<Dedicated>>>,
    slots: Arc<Semaphore>,
    /// Set when the server's module refused `WAIT` (plain locks) or
    /// `BLOCK` (fair locks): by the call's kind index.
    unsupported: [AtomicBool; 2],
}

/// A connection of the pool, and how the server names it.
pub(crate) struct Dedicated {
    pub connection: MultiplexedConnection,
    /// Its `CLIENT ID` and address as the server sees it, to kill it from
    /// the shared connection: both must match, so that a kill retried
    /// after a server restart (whose ids start again) hits no other
    /// connection that took the id.
    pub id: i64,
    pub addr: String,
}

/// A connection taken from the pool, with its slot; back in the pool when
/// dropped, unless [`Pooled::discard`]ed.
pub(crate) struct Pooled {
    dedicated: Option<Dedicated>,
    idle: Arc<Mutex<Vec<Dedicated>>>,
    _slot: OwnedSemaphorePermit,
}

impl BlockingPool {
    pub fn new(redis: redis::Client, size: usize) -> Self {
        Self {
            redis,
            idle: Arc::default(),
            slots: Arc::new(Semaphore::new(size)),
            unsupported: [AtomicBool::new(false), AtomicBool::new(false)],
        }
    }

    /// A connection, or `None` when all are busy (or none can be opened).
    pub async fn take(&self) -> Option<Pooled> {
        let slot = self.slots.clone().try_acquire_owned().ok()?;
        let idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let dedicated = match idle {
            Some(dedicated) => dedicated,
            None => {
                // No reply timeout: the call blocks as long as it asks to.
                let config = redis::AsyncConnectionConfig::new().set_response_timeout(None);
                let mut connection = self.redis.get_multiplexed_async_connection_with_config(&config).await.ok()?;
                let info: String = redis::cmd("CLIENT").arg("INFO").query_async(&mut connection).await.ok()?;
                let field = |name: &str| info.split(' ').find_map(|field| field.strip_prefix(name)).map(str::to_owned);
                let id = field("id=")?.parse().ok()?;
                Dedicated { connection, id, addr: field("addr=")? }
            }
        };
        Some(Pooled { dedicated: Some(dedicated), idle: self.idle.clone(), _slot: slot })
    }

    /// Whether the module refused the blocking call of kind `kind`.
    pub fn is_unsupported(&self, kind: usize) -> bool {
        self.unsupported[kind].load(Ordering::Relaxed)
    }

    /// The module refused the blocking call of kind `kind`: wait by
    /// pub/sub from now on.
    pub fn set_unsupported(&self, kind: usize) {
        self.unsupported[kind].store(true, Ordering::Relaxed);
    }
}

impl Pooled {
    pub fn dedicated(&mut self) -> &mut Dedicated {
        self.dedicated.as_mut().expect("a pooled connection is present until discarded")
    }

    /// Closes the connection instead of returning it to the pool.
    pub fn discard(mut self) {
        self.dedicated = None;
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        if let Some(dedicated) = self.dedicated.take() {
            self.idle.lock().unwrap_or_else(PoisonError::into_inner).push(dedicated);
        }
    }
}
