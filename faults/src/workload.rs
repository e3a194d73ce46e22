//! The clients: each takes locks on a few names from the primary the
//! Sentinels name, holds each for a while (renewing it, as a watchdog
//! does) and records its critical section on this process's monotonic
//! clock, from the grant's reply until it stops believing it holds: at its
//! release, when a renewal says it lost the lock, or when the lease from
//! its last good renewal runs out while renewals fail.

use crate::resource::Resource;
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use testkit::Rng;

/// The workload's shape, as the measurement: 8 clients on 4
/// names, 3 s leases, holders of up to 5 s that renew.
pub const CLIENTS: usize = 8;
pub const NAMES: usize = 4;
pub const LEASE: Duration = Duration::from_millis(3_000);
pub(crate) const LONGEST_HOLD_MS: u64 = 5_000;
/// How long the client-pause fault stops a holder: past its lease.
pub const PAUSE: Duration = LEASE.saturating_add(Duration::from_secs(1));
pub(crate) const IO_TIMEOUT: Duration = Duration::from_millis(500);

/// Which lock the clients take, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Protocol {
    /// `RFENCED.ACQUIRE` (a token with every grant) instead of `RLOCK.ACQUIRE`.
    pub fenced: bool,
    /// `WAIT 1 200` after each grant; a grant no replica acknowledged is
    /// given back, as Redisson's replica sync does.
    pub wait_replica: bool,
}

/// One holder's critical section.
#[derive(Debug, Clone, Copy)]
pub struct Section {
    pub name: usize,
    pub client: usize,
    pub start: Instant,
    pub end: Instant,
}

/// A wait for a name (rlock-client's `try_lock`), granted or not.
#[derive(Debug, Clone, Copy)]
pub struct Wait {
    pub name: usize,
    pub start: Instant,
    pub end: Instant,
}

/// What the clients share: the primary as the Sentinels name it, where
/// sections, waits and lost holds go, and the fenced resource.
pub struct Shared {
    pub primary: AtomicU16,
    /// The primary the run began on, and the last grant or renewal it
    /// took: after a partition, how long a cut-off primary went on.
    original: u16,
    pub original_last_write: Mutex<Option<Instant>>,
    pub stop: AtomicBool,
    /// The next holder to look at its lock pauses (as in a GC pause or a
    /// SIGSTOP) past its lease, then writes without looking again.
    pub pause_next_holder: AtomicBool,
    pub sections: Mutex<Vec<Section>>,
    pub waits: Mutex<Vec<Wait>>,
    /// When each `lost()` fired (rlock-client).
    pub lost: Mutex<Vec<Instant>>,
    pub resource: Resource,
}

impl Shared {
    pub fn new(primary: u16) -> Arc<Shared> {
        Arc::new(Shared {
            primary: AtomicU16::new(primary),
            original: primary,
            original_last_write: Mutex::default(),
            stop: AtomicBool::new(false),
            pause_next_holder: AtomicBool::new(false),
            sections: Mutex::default(),
            waits: Mutex::default(),
            lost: Mutex::default(),
            resource: Resource::default(),
        })
    }

    pub fn record_section(&self, section: Section) {
        self.sections.lock().unwrap_or_else(|e| e.into_inner()).push(section);
    }

    pub fn record_wait(&self, wait: Wait) {
        self.waits.lock().unwrap_or_else(|e| e.into_inner()).push(wait);
    }

    pub fn record_lost(&self, at: Instant) {
        self.lost.lock().unwrap_or_else(|e| e.into_inner()).push(at);
    }

    /// The primary the Sentinels name now.
    fn primary(&self) -> u16 {
        self.primary.load(Ordering::Relaxed)
    }

    /// A grant or renewal `link`'s server just took.
    fn wrote(&self, link: &Link) {
        if link.port() == Some(self.original) {
            *self.original_last_write.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
        }
    }
}

/// Client `id`'s random choices in the run of `seed`: its own stream, the
/// same for the same seed.
pub(crate) fn client_rng(seed: u64, id: usize) -> Rng {
    Rng::from_seed(seed ^ (id as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// One client's loop, until `shared.stop`.
pub fn client(id: usize, protocol: Protocol, shared: &Shared, seed: u64) {
    let mut rng = client_rng(seed, id);
    let owner = Holder { client: id, owner: format!("client-{id}:{seed}") };
    let mut link = Link::default();
    while !shared.stop.load(Ordering::Relaxed) {
        let name = rng.below(NAMES as u64) as usize;
        let sent = Instant::now();
        match link.call(shared, |con| acquire(con, protocol, name, &owner.owner)) {
            Some(Some(token)) => {
                let start = Instant::now();
                link.wrote(shared);
                let hold_for = Duration::from_millis(200 + rng.below(LONGEST_HOLD_MS - 200));
                let end = hold(&mut link, shared, (name, &owner, token), sent, hold_for);
                let section = Section { name, client: id, start, end };
                shared.record_section(section);
            }
            Some(None) => std::thread::sleep(Duration::from_millis(10 + rng.below(50))),
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// A client and the owner id it sends.
pub(crate) struct Holder {
    pub client: usize,
    pub owner: String,
}

/// Where a client's calls go: the primary the Sentinels name ([`Link`]),
/// or the node a cluster connection routes a name to.
pub(crate) trait Caller {
    /// Runs `call`; `None` when it failed (no connection, an error or a
    /// timeout).
    fn call<T>(
        &mut self,
        shared: &Shared,
        call: impl FnOnce(&mut dyn redis::ConnectionLike) -> redis::RedisResult<T>,
    ) -> Option<T>;

    /// The grant or renewal just answered was taken where the call went.
    fn wrote(&self, _shared: &Shared) {}
}

impl Caller for Link {
    fn call<T>(
        &mut self,
        shared: &Shared,
        call: impl FnOnce(&mut dyn redis::ConnectionLike) -> redis::RedisResult<T>,
    ) -> Option<T> {
        self.call_at(shared.primary(), |con| call(con))
    }

    fn wrote(&self, shared: &Shared) {
        shared.wrote(self);
    }
}

/// Holds a granted lock for `hold_for`, renewing it every third of the
/// lease (every 100 ms while renewals fail); returns when the holder
/// stopped believing it holds the lock. Each renewal is also a write to
/// the fenced resource.
pub(crate) fn hold(
    link: &mut impl Caller,
    shared: &Shared,
    (name, holder, token): (usize, &Holder, Option<i64>),
    sent: Instant,
    hold_for: Duration,
) -> Instant {
    let key = lock_name(name);
    let lease_ms = LEASE.as_millis() as u64;
    let hold_end = Instant::now() + hold_for;
    let mut believed_until = sent + LEASE;
    let mut next_renewal = sent + LEASE / 3;
    let write = |token| {
        if let Some(token) = token {
            shared.resource.write(name, holder.client, token)
        }
    };
    write(token);
    loop {
        let wake = hold_end.min(next_renewal).min(believed_until);
        std::thread::sleep(wake.saturating_duration_since(Instant::now()));
        if shared.pause_next_holder.swap(false, Ordering::Relaxed) {
            std::thread::sleep(PAUSE);
            write(token);
            return Instant::now(); // it acted as the holder until here
        }
        let now = Instant::now();
        if now >= believed_until {
            return believed_until;
        }
        if now >= hold_end {
            let _ = link.call(shared, |con| {
                redis::cmd("RLOCK.RELEASE").arg(&key).arg(&holder.owner).query::<redis::Value>(con)
            });
            return now;
        }
        let renewed = link
            .call(shared, |con| redis::cmd("RLOCK.RENEW").arg(&key).arg(&holder.owner).arg(lease_ms).query::<i64>(con));
        match renewed {
            Some(1) => {
                link.wrote(shared);
                (believed_until, next_renewal) = (now + LEASE, now + LEASE / 3);
            }
            Some(_) => return Instant::now(), // told it lost the lock
            None => next_renewal = now + Duration::from_millis(100),
        }
        write(token);
    }
}

/// A connection to a server, opened again when the port changes (the
/// primary the Sentinels name) or a call fails.
#[derive(Default)]
pub(crate) struct Link {
    con: Option<(u16, redis::Connection)>,
}

impl Link {
    fn port(&self) -> Option<u16> {
        self.con.as_ref().map(|(port, _)| *port)
    }

    /// Runs `call` on the server at `port`; `None` when it failed (no
    /// connection, an error or a timeout).
    pub(crate) fn call_at<T>(
        &mut self,
        port: u16,
        call: impl FnOnce(&mut redis::Connection) -> redis::RedisResult<T>,
    ) -> Option<T> {
        if self.con.as_ref().is_none_or(|(at, _)| *at != port) {
            self.con = connect(port).map(|con| (port, con));
        }
        let (_, con) = self.con.as_mut()?;
        let result = call(con);
        if result.is_err() {
            self.con = None;
        }
        result.ok()
    }
}

fn connect(port: u16) -> Option<redis::Connection> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).ok()?;
    let con = client.get_connection_with_timeout(IO_TIMEOUT).ok()?;
    con.set_read_timeout(Some(IO_TIMEOUT)).ok()?;
    con.set_write_timeout(Some(IO_TIMEOUT)).ok()?;
    Some(con)
}

/// One acquire: `Some` when granted, with its token when fenced; `None` when refused.
fn acquire(
    con: &mut dyn redis::ConnectionLike,
    protocol: Protocol,
    name: usize,
    owner: &str,
) -> redis::RedisResult<Option<Option<i64>>> {
    let key = lock_name(name);
    let lease = LEASE.as_millis() as u64;
    let token = match protocol.fenced {
        false => {
            let refused: Option<i64> = redis::cmd("RLOCK.ACQUIRE").arg(&key).arg(owner).arg(lease).query(con)?;
            refused.is_none().then_some(None)
        }
        true => {
            let (pttl, token): (i64, i64) = redis::cmd("RFENCED.ACQUIRE").arg(&key).arg(owner).arg(lease).query(con)?;
            (pttl == -1).then_some(Some(token))
        }
    };
    if let (Some(_), true) = (token, protocol.wait_replica) {
        let acknowledged: i64 = redis::cmd("WAIT").arg(1).arg(200).query(con)?;
        if acknowledged == 0 {
            let _: redis::Value = redis::cmd("RLOCK.RELEASE").arg(&key).arg(owner).query(con)?;
            return Ok(None);
        }
    }
    Ok(token)
}

pub fn lock_name(name: usize) -> String {
    format!("lock-{name}")
}
