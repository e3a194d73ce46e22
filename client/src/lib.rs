//! Async Rust client for rlock, the Redis module that implements Redisson's lock family as native commands.
//!
//! ```no_run
//! # async fn example() -> rlock_client::Result<()> {
//! let client = rlock_client::Client::open("redis://127.0.0.1:6379/").await?;
//! let lock = client.lock("orders:42");
//! let guard = lock.lock().await?; // waits; the watchdog renews the lease
//! tokio::select! {
//!     _ = guard.lost() => { /* the lock is gone: stop */ }
//!     _ = async { /* the critical section */ } => {}
//! }
//! guard.unlock().await?;
//! # Ok(()) }
//! ```
//!
//! - Locks are Redisson-compatible: Java services on Redisson and Rust
//!   services on this crate exclude each other on the same key.
//! - Waiters of plain and fair locks block on the server by default
//!   (`RLOCK.ACQUIRE … WAIT`, on a pool of dedicated connections: see
//!   [`ClientOptions::with_blocking_connections`]) and are granted the lock
//!   there the moment it frees; a waiter that gives up leaves the server's
//!   queue at once. Other waiters wait as Redisson's: a shared,
//!   reference-counted subscription to the lock's channel per client,
//!   woken by the message or at the holder's PTTL. No busy polling.
//! - An acquire whose reply is lost is never sent again blindly: it is
//!   resent under its request id, which the server answers with the first
//!   outcome.
//! - One watchdog task per client renews every watchdog lock in one
//!   pipelined round trip per period (a third of the watchdog timeout).
//! - [`Guard::lost`] tells the holder when its lock is gone.
//! - Besides Redisson's `RLock` ([`Client::lock`]), its fair lock
//!   ([`Client::fair_lock`]: waiters get it in arrival order; one that gives
//!   up leaves the queue at once) and its read-write lock
//!   ([`Client::read_write_lock`], with [`ReadWriteLock::read`] and
//!   [`ReadWriteLock::write`]), all with the same handle ([`Lock`]), guard
//!   and guarantees; its fenced lock ([`Client::fenced_lock`], whose guard
//!   carries a fencing token).
//! - Several locks as one: [`MultiLock`] (all of them) and [`RedLock`] (a
//!   majority of independent primaries), as Redisson's.
//! - Redisson's synchronizers: [`Semaphore`], [`PermitExpirableSemaphore`]
//!   (leased permits, optionally renewed while held) and [`CountDownLatch`].

#![warn(missing_docs)]

mod client;
mod engine;
mod error;
mod fence;
mod guard;
mod info;
mod listing;
mod lock;
mod multi;
mod options;
mod rwlock;
mod shared;
mod synchronizers;
mod transport;

pub use client::{Client, Owner};
pub use engine::kind::Kind;
pub use engine::protocol::{release_channel, MAX_LEASE};
pub use engine::watchdog::WatchdogStats;
pub use error::{Error, Result};
pub use fence::Fence;
pub use guard::Guard;
pub use info::{HolderInfo, LockInfo, WaiterInfo};
pub use listing::{ListedLock, LockListing};
pub use lock::Lock;
pub use multi::{MultiGuard, MultiLock, RedLock, RedLockGuard};
pub use options::{ClientOptions, RetryOptions};
pub use rwlock::ReadWriteLock;
pub use synchronizers::latch::CountDownLatch;
pub use synchronizers::permits::{Permit, PermitExpirableSemaphore, PermitOptions};
pub use synchronizers::semaphore::Semaphore;
pub use transport::replica_sync::ReplicaSync;

/// The README's example runs with the doc tests, so that it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
