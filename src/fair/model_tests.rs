//! Model-based test of the fair queue over time: random waiters (native
//! and Redisson's hints, faithful, dying, giving up), leases mostly left
//! to run out (chains of leases without a release), on one lock, with the
//! server run as the glue runs it (`handoff.rs`: a look after each command
//! that changed something, one timer per lock that keeps the earliest
//! time). After every moment of simulated time it checks:
//!
//! - every head of a free lock is told its turn: published to since the
//!   lock last went to someone, or the timer fires within 1 ms (a lease
//!   runs out at its end, the look comes 1 ms later);
//! - faithful waiters (back within their wait when told, on time at their
//!   hint) get the lock in arrival order, every one of them;
//! - no hint is below 1 ms.

use super::queue::Waiters;
use super::turn_tests::{Fair, T0};
use super::*;
use crate::keyspace::memory::MemoryKeyspace as Keys;
use std::collections::HashSet;
use testkit::Rng;

const Q: (&[u8], &[u8]) = (b"redisson_lock_queue:{f}", b"redisson_lock_timeout:{f}");

/// The server: the keys and its memory of the lock, as `handoff.rs`
/// keeps it (the waits, the head told, the timer, whether it watches).
struct Server {
    fair: Fair,
    head_told: bool,
    timer: Option<i64>,
    watched: bool,
    /// Owners told their turn since the lock last went to someone.
    told_since_grant: HashSet<Vec<u8>>,
}

impl Server {
    fn new() -> Self {
        Self { fair: Fair::new(), head_told: false, timer: None, watched: false, told_since_grant: HashSet::new() }
    }

    /// Runs one command, then what `Session::close` does after it.
    fn command<T>(&mut self, run: impl FnOnce(&FairLock, &mut Keys, &mut Waits, i64) -> (T, Change)) -> T {
        self.fair.keys = self.fair.keys.next_command(self.fair.now);
        let (outcome, change) = run(&self.fair.lock, &mut self.fair.keys, &mut self.fair.waits, self.fair.now);
        self.note_messages();
        let unwatched = matches!(change, Change::None | Change::Lease);
        if !(unwatched && self.fair.waits.is_empty() && !self.watched) {
            self.watched = true;
            self.head_told = change == Change::HeadTold;
            match change {
                Change::None => self.forget_if_idle(),
                _ => self.look(),
            }
        }
        outcome
    }

    /// `look_with` and `settle`: the server's look, its timer armed anew.
    fn look(&mut self) {
        self.fair.keys = self.fair.keys.next_command(self.fair.now);
        let told = match std::mem::take(&mut self.head_told) {
            true => Told::Head,
            false => Told::Owner(self.fair.told.as_deref()),
        };
        let tick = self
            .fair
            .lock
            .tick(&mut self.fair.keys, &mut self.fair.waits, (&[], told), (self.fair.now, Delay::OVER))
            .unwrap();
        self.note_messages();
        self.fair.told = tick.told;
        self.timer = match (tick.next_at, self.timer) {
            (Some(at), Some(armed)) => Some(at.min(armed)),
            (at, _) => at,
        };
        if !tick.queued {
            self.fair.waits = Waits::default();
        }
        self.forget_if_idle();
    }

    fn forget_if_idle(&mut self) {
        if self.fair.waits.is_empty() && self.timer.is_none() && self.fair.told.is_none() {
            self.watched = false;
        }
    }

    fn note_messages(&mut self) {
        let prefix = "PUBLISH redisson_lock__channel:{f}:";
        for effect in &self.fair.keys.effects {
            if let Some(owner) = effect.strip_prefix(prefix).and_then(|rest| rest.strip_suffix(" 0")) {
                self.told_since_grant.insert(owner.as_bytes().to_vec());
            }
        }
    }

    fn free(&self) -> bool {
        !self.fair.keys.next_command(self.fair.now).keys.contains_key(b"f".as_slice())
    }

    /// The live head, as the next command would see it.
    fn head(&self) -> Option<Vec<u8>> {
        let mut keys = self.fair.keys.next_command(self.fair.now);
        let waiters = Waiters::read(&mut keys, Q, &self.fair.waits, self.fair.now).unwrap();
        waiters.head().map(<[u8]>::to_vec)
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Fate {
    /// Back within its wait when told, on time at its hint.
    Faithful,
    /// Never calls again once queued.
    Dies,
    /// Gives up at this time (Redisson's acquireFailed).
    GivesUp(i64),
}

#[derive(Debug)]
struct Waiter {
    owner: Vec<u8>,
    lease_ms: i64,
    wait: Wait,
    fate: Fate,
    /// When it calls next (its arrival first).
    next_at: Option<i64>,
    /// A holder's early release.
    releases_at: Option<i64>,
    /// It is on its way back from being told.
    coming_back: bool,
}

fn waiters(rng: &mut Rng) -> Vec<Waiter> {
    let mut at = T0;
    (0..6 + rng.below(6))
        .map(|i| {
            at += rng.below(400) as i64;
            let wait_ms = 100 + rng.below(900) as i64;
            let fate = match rng.below(10) {
                0 | 1 => Fate::Dies,
                2 => Fate::GivesUp(at + 1 + rng.below(3_000) as i64),
                _ => Fate::Faithful,
            };
            Waiter {
                owner: format!("w{i}").into_bytes(),
                lease_ms: 50 + rng.below(700) as i64,
                wait: if rng.chance(50) { Wait::redisson(wait_ms) } else { Wait::native(wait_ms) },
                fate,
                next_at: Some(at),
                releases_at: None,
                coming_back: false,
            }
        })
        .collect()
}

/// One run: every event in time order, checks after each moment.
fn run(seed: u64) {
    let mut rng = Rng::from_seed(seed);
    let mut server = Server::new();
    let mut waiters = waiters(&mut rng);
    let mut granted: Vec<Vec<u8>> = Vec::new();
    let context = |server: &Server, what: &str| format!("seed {seed}, at +{} ms: {what}", server.fair.now - T0);
    for _ in 0..20_000 {
        let next_call = waiters.iter().filter_map(|w| w.next_at.into_iter().chain(w.releases_at).min()).min();
        // The moment a lease runs out is looked at too.
        let lease_end =
            server.fair.keys.keys.get(b"f".as_slice()).and_then(|(_, at)| *at).filter(|at| *at > server.fair.now);
        let Some(now) = [server.timer, next_call, lease_end].into_iter().flatten().min() else { break };
        assert!(now > server.fair.now || server.fair.now == T0, "{}", context(&server, "time stands still"));
        server.fair.now = now;
        check_told(&server, &context);
        if server.timer.is_some_and(|at| at <= now) {
            server.timer = None;
            server.look();
        }
        for waiter in waiters.iter_mut() {
            if waiter.releases_at == Some(now) {
                waiter.releases_at = None;
                let owner = waiter.owner.clone();
                server.command(|lock, keys, waits, now| {
                    let released = lock.release(keys, waits, &owner, (waiter.lease_ms, None), now).unwrap();
                    (released, Change::of_release(released.0, released.1))
                });
            }
            if let Fate::GivesUp(at) = waiter.fate {
                if at <= now && waiter.next_at.is_some() {
                    waiter.next_at = None;
                    let (owner, wait_ms) = (waiter.owner.clone(), waiter.wait.ms);
                    server.command(|lock, keys, waits, now| {
                        ((), lock.cancel(keys, waits, &owner, wait_ms, now).unwrap())
                    });
                    continue;
                }
            }
            if waiter.next_at != Some(now) {
                continue;
            }
            waiter.coming_back = false;
            let (owner, lease_ms, wait) = (waiter.owner.clone(), waiter.lease_ms, waiter.wait);
            let acquired = server.command(|lock, keys, waits, now| {
                let acquired = lock.acquire(keys, waits, &owner, (lease_ms, Some(wait)), (now, Delay::OVER)).unwrap();
                (acquired, Change::of_acquire(&acquired))
            });
            waiter.next_at = match acquired {
                Acquire::Acquired => {
                    server.told_since_grant.clear();
                    granted.push(owner.clone());
                    if rng.chance(20) {
                        waiter.releases_at = Some(now + 1 + rng.below(lease_ms as u64 - 1) as i64);
                    }
                    None
                }
                Acquire::Queued { hint_ms } => {
                    assert!(hint_ms >= 1, "{}", context(&server, "a hint below 1 ms"));
                    (waiter.fate != Fate::Dies).then_some(now + hint_ms)
                }
                other => panic!("{}", context(&server, &format!("{other:?}"))),
            };
        }
        // Told waiters come back within their wait.
        for waiter in waiters.iter_mut().filter(|w| w.next_at.is_some() && w.fate != Fate::Dies) {
            if server.told_since_grant.contains(&waiter.owner) && !waiter.coming_back {
                waiter.coming_back = true;
                let back = now + rng.below(waiter.wait.ms as u64 / 2) as i64;
                waiter.next_at = waiter.next_at.map(|at| at.min(back.max(now + 1)));
            }
        }
        check_told(&server, &context);
    }
    let faithful: Vec<Vec<u8>> = waiters.iter().filter(|w| w.fate == Fate::Faithful).map(|w| w.owner.clone()).collect();
    let faithful_granted: Vec<Vec<u8>> = granted.into_iter().filter(|owner| faithful.contains(owner)).collect();
    assert_eq!(faithful_granted, faithful, "seed {seed}: faithful waiters get the lock, in arrival order");
}

/// The head of a free lock was told, or the server's look is due.
fn check_told(server: &Server, context: &impl Fn(&Server, &str) -> String) {
    if let (true, Some(head)) = (server.free(), server.head()) {
        let told = server.told_since_grant.contains(&head) || server.timer.is_some_and(|at| at <= server.fair.now + 1);
        assert!(told, "{}", context(server, &format!("{} heads a free lock, untold", String::from_utf8_lossy(&head))));
    }
}

#[test]
fn every_new_head_of_a_free_lock_is_told_through_chains_of_leases() {
    let runs = std::env::var("RLOCK_FAIR_MODEL_RUNS").ok().and_then(|runs| runs.parse().ok()).unwrap_or(300);
    let first = Rng::seed_from_env("fair model_tests");
    for seed in first..first + runs {
        run(seed);
    }
}
