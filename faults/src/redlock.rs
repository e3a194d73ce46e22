//! RedLock's clients, over independent primaries (Redis's Redlock,
//! Redisson's RedissonRedLock): a client holds a name once a majority of
//! the primaries granted it within the lease less the time spent and the
//! clock drift; it renews on every primary and holds on while a majority
//! renews; it releases on every primary, and gives back what a failed
//! attempt took. Each attempt visits the primaries from a random one on,
//! as parallel attempts would reach them in any order.

use crate::workload::{client_rng, lock_name, Link, Section, Shared, LEASE, LONGEST_HOLD_MS, NAMES};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// The independent primaries of the RedLock topology.
pub const PRIMARIES: usize = 5;
const MAJORITY: usize = PRIMARIES / 2 + 1;

/// A LAN's round trip, added to each acquire's: on loopback, a client
/// reaches all the primaries before another can start, and two clients
/// hardly ever split a name's primaries between them.
const ROUND_TRIP: Duration = Duration::from_millis(2);

/// The clock drift Redlock allows for: 1% of the lease, plus 2 ms.
fn drift() -> Duration {
    LEASE / 100 + Duration::from_millis(2)
}

/// One client's loop over the primaries on `ports`, until `shared.stop`.
pub fn client(id: usize, ports: &[u16], shared: &Shared, seed: u64) {
    let mut rng = client_rng(seed, id);
    let owner = format!("client-{id}:{seed}");
    let mut links: Vec<Link> = ports.iter().map(|_| Link::default()).collect();
    let mut primaries = Primaries { ports, links: &mut links, owner: &owner };
    while !shared.stop.load(Ordering::Relaxed) {
        let name = lock_name(rng.below(NAMES as u64) as usize);
        let first = rng.below(PRIMARIES as u64) as usize;
        let sent = Instant::now();
        let granted = primaries.on_all(first, |con, owner| {
            std::thread::sleep(ROUND_TRIP);
            let refused: Option<i64> =
                redis::cmd("RLOCK.ACQUIRE").arg(&name).arg(owner).arg(LEASE.as_millis() as u64).query(con)?;
            Ok(refused.is_none())
        });
        if granted < MAJORITY || Instant::now() >= sent + LEASE - drift() {
            primaries.release(&name);
            std::thread::sleep(Duration::from_millis(10 + rng.below(50)));
            continue;
        }
        let start = Instant::now();
        let hold_for = Duration::from_millis(200 + rng.below(LONGEST_HOLD_MS - 200));
        let end = primaries.hold(&name, sent, start + hold_for);
        primaries.release(&name);
        let section = Section { name: name_index(&name), client: id, start, end };
        shared.record_section(section);
    }
}

fn name_index(name: &str) -> usize {
    name.trim_start_matches("lock-").parse().expect("a lock name")
}

/// One client's connections to every primary, and its owner id.
struct Primaries<'a> {
    ports: &'a [u16],
    links: &'a mut [Link],
    owner: &'a str,
}

impl Primaries<'_> {
    /// Runs `call` on every primary from `first` on; how many said yes.
    fn on_all(
        &mut self,
        first: usize,
        call: impl Fn(&mut redis::Connection, &str) -> redis::RedisResult<bool>,
    ) -> usize {
        (0..self.ports.len())
            .map(|i| (first + i) % self.ports.len())
            .filter(|&i| self.links[i].call_at(self.ports[i], |con| call(con, self.owner)) == Some(true))
            .count()
    }

    /// Renews every third of the lease until `hold_end`; returns when the
    /// holder stopped believing it holds: at `hold_end`, when a renewal
    /// round reached no majority, or when its validity ran out meanwhile.
    fn hold(&mut self, name: &str, sent: Instant, hold_end: Instant) -> Instant {
        let mut valid_until = sent + LEASE - drift();
        loop {
            let renewal = (Instant::now() + LEASE / 3).min(hold_end).min(valid_until);
            std::thread::sleep(renewal.saturating_duration_since(Instant::now()));
            let now = Instant::now();
            if now >= valid_until {
                return valid_until;
            }
            if now >= hold_end {
                return now;
            }
            let renewed = self.on_all(0, |con, owner| {
                let renewed: i64 =
                    redis::cmd("RLOCK.RENEW").arg(name).arg(owner).arg(LEASE.as_millis() as u64).query(con)?;
                Ok(renewed == 1)
            });
            if renewed < MAJORITY {
                return Instant::now(); // told it lost the majority
            }
            valid_until = now + LEASE - drift();
        }
    }

    fn release(&mut self, name: &str) {
        self.on_all(0, |con, owner| {
            redis::cmd("RLOCK.RELEASE").arg(name).arg(owner).query::<redis::Value>(con).map(|_| true)
        });
    }
}
