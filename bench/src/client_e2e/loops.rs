//! The cycles section 2 compares rlock-client with, each sent on a plain
//! redis-rs connection.

use redis::aio::ConnectionManager;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use testkit::redisson_lock::{scripts, sha1_hex, VERSION};
use testkit::{release_channel, unlock_latch_key, RedissonScripts, Server};

pub type Cycle = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

const LEASE_MS: i64 = 30_000;

/// Redisson 4.7.0's acquire and latched unlock texts, loaded.
#[derive(Clone)]
pub struct RedissonTexts {
    acquire_sha: Arc<str>,
    release_sha: Arc<str>,
}

impl RedissonTexts {
    /// Reads the texts from Redisson's jar and loads them, as Redisson's
    /// first call does.
    pub fn load(server: &Server) -> Self {
        let texts = scripts(VERSION);
        let mut admin = server.connection();
        for text in [&texts.acquire, &texts.release] {
            let _: String = redis::cmd("SCRIPT").arg("LOAD").arg(text.as_slice()).query(&mut admin).expect("load");
        }
        Self { acquire_sha: sha1_hex(&texts.acquire).into(), release_sha: sha1_hex(&texts.release).into() }
    }
}

/// Redisson 4.7.0's lock+unlock as it goes over the wire: the acquire,
/// the unlock with a fresh latch key, then the latch's `DEL`, sent after
/// the unlock's reply and not waited for.
pub fn redisson_cycle(texts: RedissonTexts, connection: ConnectionManager) -> impl Fn(usize) -> Cycle + Send + Sync {
    let next_id = Arc::new(AtomicU64::new(0));
    move |task| {
        let (texts, mut connection, next_id) = (texts.clone(), connection.clone(), next_id.clone());
        Box::pin(async move {
            let (name, owner) = (format!("e2e-redisson:{task}"), format!("bench-owner:{task}"));
            let request = format!("{:032x}", next_id.fetch_add(1, Ordering::Relaxed));
            let latch = unlock_latch_key(name.as_bytes(), request.as_bytes());
            let acquired: Option<i64> = redis::cmd("EVALSHA")
                .arg(&*texts.acquire_sha)
                .arg(1)
                .arg(&name)
                .arg(LEASE_MS)
                .arg(&owner)
                .query_async(&mut connection)
                .await
                .expect("acquire");
            assert_eq!(acquired, None, "distinct locks are free");
            let released: Option<i64> = redis::cmd("EVALSHA")
                .arg(&*texts.release_sha)
                .arg(3)
                .arg(&name)
                .arg(release_channel(name.as_bytes()))
                .arg(&latch)
                .arg(0)
                .arg(LEASE_MS)
                .arg(&owner)
                .arg("publish")
                .arg(rlock_protocol::DEFAULT_LATCH_MS)
                .query_async(&mut connection)
                .await
                .expect("release");
            assert_eq!(released, Some(1), "a held lock is released");
            tokio::spawn(async move {
                let _: i64 = redis::cmd("DEL").arg(latch).query_async(&mut connection).await.expect("del");
            });
        })
    }
}

/// The bare script loop of the pre-3.24 protocol: Redisson's acquire and
/// unlock without a latch, nothing else.
pub fn script_cycle(
    scripts: Arc<RedissonScripts>,
    connection: ConnectionManager,
) -> impl Fn(usize) -> Cycle + Send + Sync {
    move |task| {
        let (scripts, mut connection) = (scripts.clone(), connection.clone());
        Box::pin(async move {
            let (name, owner) = (format!("e2e-scripts:{task}"), format!("bench-owner:{task}"));
            let acquired: Option<i64> = scripts
                .acquire(name.as_bytes(), owner.as_bytes(), LEASE_MS)
                .query_async(&mut connection)
                .await
                .expect("acquire");
            assert_eq!(acquired, None, "distinct locks are free");
            let _: Option<i64> = scripts
                .release(name.as_bytes(), owner.as_bytes(), LEASE_MS)
                .query_async(&mut connection)
                .await
                .expect("release");
        })
    }
}

/// Keys a loop of the client's commands deletes in one `DEL`, as the
/// client's sweeper gathers the latch keys it no longer needs.
const SWEEP_EVERY: usize = 16;

/// The ceilings a client on this machine can reach: a loop with no client
/// logic at all, sending `RLOCK.ACQUIRE` and `RLOCK.RELEASE` bare, or
/// (`as_client`) sending exactly what rlock-client sends per cycle: the
/// acquire with the owner's count (`HOLDS 0`, the short reply), the release
/// with its unlock latch, and a `DEL` of the latch keys every
/// [`SWEEP_EVERY`] cycles.
pub fn bare_cycle(
    connection: ConnectionManager,
    prefix: &'static str,
    as_client: bool,
) -> impl Fn(usize) -> Cycle + Send + Sync {
    let swept: Arc<Vec<std::sync::Mutex<Vec<Vec<u8>>>>> =
        Arc::new((0..super::TASK_COUNTS[super::TASK_COUNTS.len() - 1]).map(|_| Default::default()).collect());
    let next_id = Arc::new(AtomicU64::new(0));
    move |task| {
        let (mut connection, swept, next_id) = (connection.clone(), swept.clone(), next_id.clone());
        Box::pin(async move {
            let (name, owner) = (format!("{prefix}:{task}"), format!("bench-owner:{task}"));
            let mut acquire = redis::cmd("RLOCK.ACQUIRE");
            acquire.arg(&name).arg(&owner).arg(LEASE_MS);
            let mut release = redis::cmd("RLOCK.RELEASE");
            release.arg(&name).arg(&owner).arg(LEASE_MS);
            let mut keys = vec![];
            if as_client {
                let id = next_id.fetch_add(1, Ordering::Relaxed);
                let latch = rlock_protocol::unlock_latch_key(name.as_bytes(), format!("{id}-r").as_bytes());
                acquire.arg("HOLDS").arg(0);
                release.arg("LATCH").arg(&latch).arg("PX").arg(LEASE_MS);
                keys.push(latch);
            }
            let _: redis::Value = acquire.query_async(&mut connection).await.expect("acquire");
            let _: redis::Value = release.query_async(&mut connection).await.expect("release");
            let batch = {
                let mut pending = swept[task].lock().expect("sweep list");
                pending.extend(keys);
                (pending.len() >= SWEEP_EVERY).then(|| std::mem::take(&mut *pending))
            };
            if let Some(batch) = batch {
                let _: i64 = redis::cmd("DEL").arg(batch).query_async(&mut connection).await.expect("del");
            }
        })
    }
}
