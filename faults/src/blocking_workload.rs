//! The blocking workload, on the cluster: each client waits for a name on
//! the server (`RLOCK.ACQUIRE … WAIT … ID`: the module hands the lock to
//! the first caller blocked on it), through a redis-rs cluster connection
//! that follows `MOVED`, `ASK` and `TRYAGAIN`. The module's blocked
//! callers then meet the faults: a slot that migrates while they wait must
//! not be granted on the node it left. Holds renew and release as the
//! command workload's ([`hold`]); each wait is recorded for the
//! stuck-waiter check.

use crate::workload::{client_rng, hold, lock_name, Caller, Holder, Section, Shared, Wait, IO_TIMEOUT, LEASE, NAMES};
use redis::cluster::{ClusterClient, ClusterConnection};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How long a client waits for a name before it picks another.
const LONGEST_WAIT_MS: u64 = 3_000;
/// How long a grant's record answers a resend of its request: longer
/// than any resend, short enough that a migration moves few records.
const RECORD_MS: u64 = 10_000;
/// Redirections and `TRYAGAIN`s followed per call: a call stays bounded
/// when a node hangs.
const RETRIES: u32 = 3;

/// One client's loop over the cluster's nodes on `ports`, until `shared.stop`.
pub fn client(id: usize, ports: &[u16], shared: &Shared, seed: u64) {
    let mut rng = client_rng(seed, id);
    let holder = Holder { client: id, owner: format!("client-{id}:{seed}") };
    let mut link = ClusterLink { ports, con: None };
    let lease_ms = LEASE.as_millis() as u64;
    let mut requests = 0u64;
    while !shared.stop.load(Ordering::Relaxed) {
        let name = rng.below(NAMES as u64) as usize;
        let wait = Duration::from_millis(500 + rng.below(LONGEST_WAIT_MS - 500));
        requests += 1;
        let request = format!("{id}-{requests}");
        // The lease starts at the grant, some time after this: the hold
        // counts it from here, and renews at once after a long wait.
        let asked = Instant::now();
        // A resend (after a timeout, a redirection) carries the same id:
        // it gets the first call's grant rather than a second level.
        let reply = link.blocking(wait + IO_TIMEOUT, shared, |con| {
            redis::cmd("RLOCK.ACQUIRE")
                .arg(lock_name(name))
                .arg(&holder.owner)
                .arg(lease_ms)
                .arg("WAIT")
                .arg(wait.as_millis() as u64)
                .arg("ID")
                .arg(&request)
                .arg("PX")
                .arg(RECORD_MS)
                .query::<Option<i64>>(con)
        });
        let answered = Instant::now();
        shared.record_wait(Wait { name, start: asked, end: answered });
        match reply {
            Some(None) => {
                let hold_for = Duration::from_millis(200 + rng.below(crate::workload::LONGEST_HOLD_MS - 200));
                let end = hold(&mut link, shared, (name, &holder, None), asked, hold_for);
                shared.record_section(Section { name, client: id, start: answered, end });
            }
            Some(Some(_)) => {} // the wait ran out
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// A cluster connection, made again when a call fails.
struct ClusterLink<'a> {
    ports: &'a [u16],
    con: Option<ClusterConnection>,
}

impl ClusterLink<'_> {
    fn connect(&self) -> Option<ClusterConnection> {
        let nodes: Vec<String> = self.ports.iter().map(|port| format!("redis://127.0.0.1:{port}")).collect();
        let client = ClusterClient::builder(nodes)
            .connection_timeout(IO_TIMEOUT)
            .response_timeout(IO_TIMEOUT)
            .retries(RETRIES)
            .min_retry_wait(10)
            .max_retry_wait(100)
            .build()
            .ok()?;
        client.get_connection().ok()
    }

    /// The connection, made again if the last call failed.
    fn connection(&mut self) -> Option<&mut ClusterConnection> {
        if self.con.is_none() {
            self.con = self.connect();
        }
        self.con.as_mut()
    }

    /// Runs `call` with replies awaited up to `timeout` (a blocked call).
    fn blocking<T>(
        &mut self,
        timeout: Duration,
        shared: &Shared,
        call: impl FnOnce(&mut dyn redis::ConnectionLike) -> redis::RedisResult<T>,
    ) -> Option<T> {
        self.connection()?.set_read_timeout(Some(timeout)).ok()?;
        let reply = self.call(shared, call);
        if let Some(con) = &self.con {
            let _ = con.set_read_timeout(Some(IO_TIMEOUT));
        }
        reply
    }
}

impl Caller for ClusterLink<'_> {
    fn call<T>(
        &mut self,
        _shared: &Shared,
        call: impl FnOnce(&mut dyn redis::ConnectionLike) -> redis::RedisResult<T>,
    ) -> Option<T> {
        let result = call(self.connection()?);
        if result.is_err() {
            self.con = None;
        }
        result.ok()
    }
}
