//! Redisson's waiters (`WAIT … REDISSON`) get the hints Redisson's script
//! gives: a newcomer the time to the tail's deadline (the lock's PTTL when
//! nobody waits), a waiter asking again the lock's PTTL; never below 1 ms.
//! The scenarios of Redisson's own timeout-drift tests, step by step.

use super::*;
use crate::keyspace::memory::MemoryKeyspace as Keys;

const T0: i64 = 1_000_000;

struct Fair {
    lock: FairLock,
    keys: Keys,
    waits: Waits,
    now: i64,
}

impl Fair {
    fn new() -> Self {
        Self { lock: FairLock::new(b"f"), keys: Keys::default(), waits: Waits::default(), now: T0 }
    }

    /// Redisson's waiting acquire (3.32+), `after_ms` after the last call.
    fn acquire(&mut self, after_ms: i64, owner: &str, (lease_ms, wait_ms): (i64, i64)) -> Option<i64> {
        self.acquire_as(after_ms, owner, (lease_ms, Wait::redisson(wait_ms)))
    }

    fn acquire_as(&mut self, after_ms: i64, owner: &str, (lease_ms, wait): (i64, Wait)) -> Option<i64> {
        self.now += after_ms;
        self.keys = self.keys.next_command(self.now);
        let (lock, wait) = (&self.lock, Some(wait));
        match lock.acquire(&mut self.keys, &mut self.waits, owner.as_bytes(), (lease_ms, wait), (self.now, Delay::OVER))
        {
            Ok(Acquire::Acquired) => None,
            Ok(Acquire::Queued { hint_ms }) => Some(hint_ms),
            other => panic!("{owner}: {other:?}"),
        }
    }

    fn give_up(&mut self, after_ms: i64, owner: &str, wait_ms: i64) {
        self.now += after_ms;
        self.keys = self.keys.next_command(self.now);
        self.lock.cancel(&mut self.keys, &mut self.waits, owner.as_bytes(), wait_ms, self.now).unwrap();
    }

    fn release(&mut self, after_ms: i64, owner: &str) {
        self.now += after_ms;
        self.keys = self.keys.next_command(self.now);
        let released = self.lock.release(&mut self.keys, &mut self.waits, owner.as_bytes(), (30_000, None), self.now);
        assert_eq!(released.unwrap().0, Release::Released);
    }
}

/// Each newcomer's hint is the lease plus the waits ahead of it; a give-up
/// takes its wait off those behind it; those asking again are told the
/// lease, also after the head took the lock.
#[test]
fn hints_follow_the_leases_and_waits_ahead_through_a_give_up() {
    let mut fair = Fair::new();
    let times = (30_000, 5_000);
    assert_eq!(fair.acquire(0, "init", times), None);
    assert_eq!(fair.acquire(0, "a", times), Some(30_000));
    assert_eq!(fair.acquire(0, "b", times), Some(35_000));
    assert_eq!(fair.acquire(0, "c", times), Some(40_000));
    assert_eq!(fair.acquire(0, "d", times), Some(45_000));
    fair.give_up(0, "b", 5_000);
    for owner in ["a", "c", "d"] {
        assert_eq!(fair.acquire(10, owner, times), Some(30_000 - (fair.now - T0)), "{owner} asks again");
    }
    fair.release(10, "init");
    assert_eq!(fair.acquire(10, "a", times), None, "a's turn");
    assert_eq!(fair.acquire(10, "c", times), Some(30_000 - 10));
    assert_eq!(fair.acquire(10, "d", times), Some(30_000 - 20));
    // A newcomer now: behind d, whose score lost a's wait at a's grant.
    assert_eq!(fair.acquire(0, "e", times), Some(40_000 - (fair.now - T0)));
}

/// The head takes the lock: the others' deadlines lose its wait, so a
/// newcomer's hint is one wait more than the lease, as a queued one's was.
#[test]
fn a_grant_takes_the_takers_wait_off_the_deadlines_behind() {
    let mut fair = Fair::new();
    let times = (300_000, 5_000);
    assert_eq!(fair.acquire(0, "init", times), None);
    assert_eq!(fair.acquire(0, "a", times), Some(300_000));
    let b = fair.acquire(0, "b", times).unwrap();
    assert_eq!(b, 305_000);
    fair.release(1, "init");
    assert_eq!(fair.acquire(1, "a", times), None);
    let c = fair.acquire(1, "c", times).unwrap();
    let b_again = fair.acquire(1, "b", times).unwrap();
    assert_eq!(b - b_again, 5_000 + 2, "b is told the new lease");
    assert_eq!(c - b_again, 5_000 - 1, "c one wait more");
}

/// Short waits (Redisson's `fairLockWaitTimeout` 100 ms): the hints are
/// 100 ms apart, and once the waiters ahead let their turns pass, the last
/// one takes the lock.
#[test]
fn waiters_that_never_come_back_are_passed_at_their_deadlines() {
    let mut fair = Fair::new();
    let times = (500, 100);
    assert_eq!(fair.acquire(0, "init", times), None);
    let first = fair.acquire(0, "a", times).unwrap();
    assert_eq!(fair.acquire(0, "b", times), Some(600));
    let third = fair.acquire(0, "c", times).unwrap();
    assert_eq!(third - first, 200);
    assert_eq!(fair.acquire(third + 100, "c", times), None, "a and b let their turns pass");
}

/// Where Redisson's script would reply 0 (the lock is free, another
/// waiter's turn), the hint is the native one: at least 1 ms.
#[test]
fn no_hint_is_below_one_ms() {
    let mut fair = Fair::new();
    let times = (500, 1_000);
    assert_eq!(fair.acquire(0, "init", times), None);
    assert_eq!(fair.acquire(0, "a", times), Some(500));
    assert_eq!(fair.acquire(0, "b", times), Some(1_500));
    fair.release(0, "init");
    assert_eq!(fair.acquire(10, "b", times), Some(500), "until a's turn is over, at most half b's wait");
}

/// Redisson's texts before 3.32 tell a waiter that asks again the time to
/// the deadline ahead of it: its own deadline less its wait.
#[test]
fn before_3_32_a_waiter_asking_again_is_told_the_deadline_ahead() {
    let mut fair = Fair::new();
    let wait = Wait { ms: 5_000, hints: Hints::Redisson(AskedAgain::Ahead) };
    assert_eq!(fair.acquire_as(0, "init", (30_000, wait)), None);
    assert_eq!(fair.acquire_as(0, "a", (30_000, wait)), Some(30_000));
    assert_eq!(fair.acquire_as(0, "b", (30_000, wait)), Some(35_000));
    assert_eq!(fair.acquire_as(10, "a", (30_000, wait)), Some(30_000 - 10), "the lease's end");
    assert_eq!(fair.acquire_as(10, "b", (30_000, wait)), Some(35_000 - 20), "a's deadline");
}
