use thiserror::Error;

/// Errors of lock operations.
///
/// ```no_run
/// use rlock_client::{Client, Error};
///
/// # async fn example() -> rlock_client::Result<()> {
/// let client = Client::open("redis://127.0.0.1:6379/").await?;
/// let guard = match client.lock("orders:42").lock().await {
///     Err(Error::ModuleNotLoaded) => panic!("load librlock.so into the server first"),
///     guard => guard?,
/// };
/// match guard.unlock().await {
///     Ok(()) => {}
///     Err(Error::NotOwner) => println!("lost before the release: its work may have overlapped another's"),
///     Err(err) => return Err(err),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum Error {
    /// The server does not know the rlock commands (RLOCK.*, or the
    /// family's commands of a module too old to have them).
    #[error("rlock module not loaded: the Redis server does not know the rlock commands (load it with `loadmodule /path/to/librlock.so`)")]
    ModuleNotLoaded,
    /// The lock is not held by this owner: it expired, was force-released
    /// or deleted, or was never taken.
    #[error("lock is not held by this owner (expired, force-released, or never taken)")]
    NotOwner,
    /// The lease is zero or longer than the module accepts.
    #[error("invalid lease {0:?}: must be from 1 ms to 365 days")]
    InvalidLease(std::time::Duration),
    /// The watchdog timeout is under 3 ms or longer than the longest lease.
    #[error("invalid watchdog timeout {0:?}: must be from 3 ms to 365 days")]
    InvalidWatchdogTimeout(std::time::Duration),
    /// A fair lock wait timeout under 1 ms or longer than the longest lease.
    #[error("invalid fair lock wait timeout {0:?}: must be from 1 ms to 365 days")]
    InvalidFairWaitTimeout(std::time::Duration),
    /// A replica sync timeout under 1 ms (`WAIT … 0` would block for ever).
    #[error("invalid replica sync timeout {0:?}: must be at least 1 ms")]
    InvalidReplicaSyncTimeout(std::time::Duration),
    /// A cluster reply timeout under 1 ms.
    #[error("invalid cluster reply timeout {0:?}: must be at least 1 ms")]
    InvalidClusterReplyTimeout(std::time::Duration),
    /// The lock was granted, but fewer replicas than required acknowledged
    /// it in time; it was released again. Retry, or lower the requirement.
    #[error("only {acknowledged} of {required} replicas acknowledged the lock in time; it was released again")]
    ReplicaSync {
        /// Replicas that acknowledged (WAIT's reply).
        acknowledged: i64,
        /// Replicas that had to.
        required: u32,
    },
    /// Every [`Client`](crate::Client) handle was dropped.
    #[error("the rlock client was closed")]
    ClientClosed,
    /// The server replied something the protocol does not allow.
    #[error("unexpected reply from the server: {0}")]
    UnexpectedReply(String),
    /// A permit's lease had run out before its release: the semaphore had
    /// taken it back (and the release confirmed that).
    #[error("the permit's lease had run out before its release")]
    PermitLapsed,
    /// A write's reply was lost (connection loss, timeout): it may or may
    /// not have taken effect, and it was not sent again, since a second one
    /// could take effect twice (a semaphore's permits have no owner to ask).
    #[error("the reply was lost; the request may or may not have taken effect: {0}")]
    OutcomeUnknown(Box<Error>),
    /// Waiting would close a cycle of waits on the server: the lock is held
    /// by an owner that waits, through any chain of holders and waiters,
    /// for a lock this owner holds. Nothing was taken; give up a lock to
    /// untangle it. Only waits blocked on the server are seen
    /// ([`ClientOptions::blocking_connections`](crate::ClientOptions)), and
    /// an owner is a handle's: a task that takes several locks is one
    /// owner to the server only through the handles of one
    /// [`Client::owned_by`](crate::Client::owned_by).
    #[error("deadlock: {cycle}")]
    Deadlock {
        /// The cycle as the server names it: `o1 waits for b held by o2, …`.
        cycle: String,
    },
    /// A Redis error: connection, I/O or server.
    #[error(transparent)]
    Redis(redis::RedisError),
}

/// Result of lock operations.
///
/// ```no_run
/// async fn locked_work(client: &rlock_client::Client) -> rlock_client::Result<()> {
///     let guard = client.lock("orders:42").lock().await?;
///     guard.unlock().await
/// }
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<redis::RedisError> for Error {
    fn from(err: redis::RedisError) -> Self {
        let unknown_command = err.code() == Some("ERR")
            && err.detail().is_some_and(|detail| {
                detail.starts_with("unknown command")
                    && ["RLOCK.", "RFAIR.", "RRW.", "RSEM.", "RPSEM.", "RLATCH.", "RFENCED."]
                        .iter()
                        .any(|prefix| detail.to_ascii_uppercase().contains(prefix))
            });
        if unknown_command {
            Error::ModuleNotLoaded
        } else if err.code() == Some("DEADLOCK") {
            Error::Deadlock { cycle: err.detail().unwrap_or_default().to_owned() }
        } else {
            Error::Redis(err)
        }
    }
}

impl Error {
    /// True when a reply did not come in time (the request may still run).
    pub(crate) fn is_timeout(&self) -> bool {
        matches!(self, Error::Redis(err) if err.is_timeout())
    }

    /// True for failures that may pass: connection loss, timeouts, a server
    /// that is loading or failing over, or short of good replicas
    /// (`NOREPLICAS`). Retried within the retry options.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Redis(err) => {
                err.is_io_error() || err.is_timeout() || err.is_connection_dropped() || self.surely_not_run()
            }
            _ => false,
        }
    }

    /// True when the connection was refused: the request never left.
    pub(crate) fn is_connection_refusal(&self) -> bool {
        matches!(self, Error::Redis(err) if err.is_connection_refusal())
    }

    /// True when the request surely did not run: the connection was
    /// refused, or the server refused it before running it (loading,
    /// failing over, a replica, or a primary short of the good replicas
    /// `min-replicas-to-write` asks for: a promoted replica whose replicas
    /// have not synced yet, an old primary cut off from them).
    pub(crate) fn surely_not_run(&self) -> bool {
        matches!(self, Error::Redis(err) if err.is_connection_refusal()
            || matches!(err.code(), Some("LOADING" | "TRYAGAIN" | "MASTERDOWN" | "READONLY" | "NOREPLICAS")))
    }
}
