//! The fair queue over time: turns, deadlines and the server's own look
//! ([`FairLock::tick`]), command after command on one keyspace.

use super::*;
use crate::delay::Delay;
use crate::keyspace::memory::{MemoryKeyspace as Keys, Value};

pub(super) const T0: i64 = 1_000_000;
const LEASE: i64 = 30_000;
const WAIT: i64 = 5_000;
const Q: &[u8] = b"redisson_lock_queue:{f}";

/// One fair lock, its keys and the server's memory of it (waits, the
/// head last told its turn), at a clock.
pub(super) struct Fair {
    pub(super) lock: FairLock,
    pub(super) keys: Keys,
    pub(super) waits: Waits,
    pub(super) told: Option<Vec<u8>>,
    pub(super) now: i64,
    /// When a lock-delay ends (0: none).
    delay_end: i64,
}

impl Fair {
    pub(super) fn new() -> Self {
        Self {
            lock: FairLock::new(b"f"),
            keys: Keys::default(),
            waits: Waits::default(),
            told: None,
            now: T0,
            delay_end: 0,
        }
    }

    /// The next command, `after_ms` later.
    fn at(&mut self, after_ms: i64) -> &mut Keys {
        self.now += after_ms;
        self.keys = self.keys.next_command(self.now);
        &mut self.keys
    }

    fn acquire(&mut self, after_ms: i64, owner: &str) -> Acquire {
        self.at(after_ms);
        let (lock, now, delay) = (&self.lock, self.now, self.delay());
        lock.acquire(&mut self.keys, &mut self.waits, owner.as_bytes(), (LEASE, Some(Wait::native(WAIT))), (now, delay))
            .unwrap()
    }

    fn release(&mut self, after_ms: i64, owner: &str) -> Release {
        self.at(after_ms);
        let (lock, now) = (&self.lock, self.now);
        let released = lock.release(&mut self.keys, &mut self.waits, owner.as_bytes(), (LEASE, None), now).unwrap().0;
        self.told = self.queue().first().map(|head| head.as_bytes().to_vec()); // the release told it
        released
    }

    fn tick(&mut self, after_ms: i64, blocked: &[Blocked<'_>]) -> Tick {
        self.at(after_ms);
        let (lock, now, delay) = (&self.lock, self.now, self.delay());
        let told = Told::Owner(self.told.as_deref());
        let tick = lock.tick(&mut self.keys, &mut self.waits, (blocked, told), (now, delay)).unwrap();
        self.told = tick.told.clone();
        tick
    }

    fn delay(&self) -> Delay {
        Delay::left(self.delay_end - self.now)
    }

    fn queue(&self) -> Vec<String> {
        match self.keys.keys.get(Q) {
            Some((Value::List(items), _)) => items.iter().map(|item| String::from_utf8_lossy(item).into()).collect(),
            _ => Vec::new(),
        }
    }

    fn deadline(&self, owner: &str) -> Option<i64> {
        match self.keys.keys.get(b"redisson_lock_timeout:{f}".as_slice()) {
            Some((Value::Zset(scores), _)) => scores.get(owner.as_bytes()).copied(),
            _ => None,
        }
    }
}

/// Issue 20's stall: a holder and four waiters; the holder releases
/// early, and each waiter asks again 3 ms after its turn comes. Every one
/// gets the lock in arrival order, and each holds it briefly.
#[test]
fn waiters_coming_back_a_little_late_get_their_turns_in_order() {
    let mut fair = Fair::new();
    assert_eq!(fair.acquire(0, "a"), Acquire::Acquired);
    for owner in ["b", "c", "d", "e"] {
        assert!(matches!(fair.acquire(1, owner), Acquire::Queued { .. }), "{owner} queues");
    }
    let mut holder = "a";
    for next in ["b", "c", "d", "e"] {
        assert_eq!(fair.release(100, holder), Release::Released);
        assert_eq!(fair.deadline(next), Some(fair.now + WAIT), "{next}'s turn starts at the release");
        assert_eq!(fair.acquire(3, next), Acquire::Acquired, "{next} takes its turn 3 ms late");
        holder = next;
    }
    assert!(fair.queue().is_empty());
}

/// A waiter that returns late but within its wait keeps its place, also
/// after leases longer than its wait (Redisson's #3004).
#[test]
fn a_lease_longer_than_the_wait_purges_no_live_waiter() {
    let mut fair = Fair::new();
    fair.acquire(0, "a");
    fair.acquire(1, "b");
    fair.acquire(1, "c");
    // The leases run out unreleased; each waiter asks again every 2 s.
    let mut polls = 0;
    while fair.acquire(2_000, "b") != Acquire::Acquired {
        assert!(matches!(fair.acquire(0, "c"), Acquire::Queued { .. }));
        polls += 1;
        assert!(polls < 20, "b gets the lock after a's lease");
    }
    assert_eq!(fair.queue(), ["c"], "c is still queued behind b");
    assert!(fair.deadline("c").unwrap() >= fair.now + LEASE + WAIT - 1, "c's deadline follows b's lease");
}

#[test]
fn a_head_that_does_not_come_loses_its_turn_and_the_next_is_told() {
    let mut fair = Fair::new();
    fair.acquire(0, "a");
    fair.acquire(1, "b");
    fair.acquire(1, "c");
    fair.release(100, "a");
    let b_deadline = fair.deadline("b").unwrap();
    let tick = fair.tick(0, &[]);
    assert_eq!(tick.next_at, Some(b_deadline + 1), "look again when b's turn is over");
    let tick = fair.tick(b_deadline + 1 - fair.now, &[]);
    assert_eq!(fair.queue(), ["c"], "b, gone, lost its turn");
    assert!(fair.keys.effects.contains(&"PUBLISH redisson_lock__channel:{f}:c 0".to_owned()), "c is told");
    assert_eq!(fair.deadline("c"), Some(fair.now + WAIT), "c's turn starts now");
    assert_eq!(tick.next_at, Some(fair.now + WAIT + 1));
    assert_eq!(fair.acquire(WAIT - 1, "c"), Acquire::Acquired);
    assert!(fair.waits.is_empty(), "the waits of those no longer queued are forgotten");
}

#[test]
fn a_blocked_head_is_granted_when_the_lock_frees_and_kept_alive_meanwhile() {
    let mut fair = Fair::new();
    fair.acquire(0, "a");
    fair.acquire(1, "b");
    let blocked = [Blocked { owner: b"b", lease_ms: 700, wait_ms: WAIT }];
    let lease_end = T0 + LEASE;
    let tick = fair.tick(0, &blocked);
    assert_eq!(tick.granted, None);
    assert_eq!(tick.next_at, Some(lease_end + 1), "b is granted at the lease's end");
    assert!(fair.deadline("b").unwrap() >= lease_end + WAIT);
    fair.release(100, "a");
    let tick = fair.tick(0, &blocked);
    assert_eq!(tick.granted.as_deref(), Some(b"b".as_slice()));
    assert!(fair.queue().is_empty());
    assert_eq!(fair.keys.keys.get(b"f".as_slice()).and_then(|(_, at)| *at), Some(fair.now + 700));
}

#[test]
fn a_blocked_waiter_a_script_dropped_is_told_to_ask_again() {
    let mut fair = Fair::new();
    fair.acquire(0, "a");
    let blocked = [Blocked { owner: b"b", lease_ms: 700, wait_ms: WAIT }];
    let tick = fair.tick(0, &blocked);
    assert_eq!(tick.unqueued, [b"b".to_vec()]);
    assert_eq!(tick.next_at, None, "a held lock with nobody queued needs no look");
}

impl Fair {
    /// What a Redisson script does to the keys between two commands: set
    /// `owner`'s deadline, queueing it at the tail if it is not queued.
    fn script_sets(&mut self, owner: &str, deadline: i64) {
        let zset = self
            .keys
            .keys
            .entry(b"redisson_lock_timeout:{f}".to_vec())
            .or_insert((Value::Zset(Default::default()), None));
        if let Value::Zset(scores) = &mut zset.0 {
            scores.insert(owner.as_bytes().to_vec(), deadline);
        }
        let list = self.keys.keys.entry(Q.to_vec()).or_insert((Value::List(Default::default()), None));
        if let Value::List(items) = &mut list.0 {
            if !items.iter().any(|item| item == owner.as_bytes()) {
                items.push_back(owner.as_bytes().to_vec());
            }
        }
    }
}

/// Redisson's give-up takes the giver's wait off every deadline behind
/// it: a native waiter behind keeps the deadline the server gave it.
#[test]
fn a_script_lowering_a_native_waiters_deadline_does_not_purge_it() {
    let mut fair = Fair::new();
    fair.acquire(0, "h");
    fair.script_sets("s", T0 + LEASE + 300);
    assert!(matches!(fair.acquire(0, "n"), Acquire::Queued { .. }));
    assert!(matches!(fair.acquire(0, "m"), Acquire::Queued { .. }));
    let given = fair.deadline("n").unwrap();
    // s gives up by script: n's deadline goes 1 s into the past.
    if let Some((Value::List(items), _)) = fair.keys.keys.get_mut(Q) {
        items.pop_front();
    }
    fair.script_sets("n", fair.now - 1_000);
    let _ = fair.acquire(10, "m");
    assert_eq!(fair.queue(), ["n", "m"], "n keeps its place");
    assert_eq!(fair.deadline("n"), Some(given), "and the deadline the server gave it");
}

/// A native head whose deadline was kept up past the chain (it asked
/// again during a longer lease) is released to: the script waiter behind
/// it keeps its own deadline, never pushed into the past, and follows
/// Redisson's arithmetic when the head takes its turn.
#[test]
fn a_turn_starting_moves_no_other_deadline_earlier() {
    let mut fair = Fair::new();
    fair.at(0);
    let (lock, now) = (&fair.lock, fair.now);
    lock.acquire(&mut fair.keys, &mut fair.waits, b"h", (300, None), (now, Delay::OVER)).unwrap();
    let _ = fair.acquire(0, "b");
    fair.script_sets("s", T0 + 300 + 5_000 + 150);
    let s_deadline = fair.deadline("s").unwrap();
    assert!(matches!(fair.acquire(0, "h"), Acquire::Reentered { .. }), "h re-enters with a 30 s lease");
    assert!(matches!(fair.acquire(10, "b"), Acquire::Queued { .. }), "b asks again: kept up past the lease");
    assert_eq!(fair.release(10, "h"), Release::Decremented { count: 1 });
    assert_eq!(fair.release(10, "h"), Release::Released);
    assert_eq!(fair.deadline("b"), Some(fair.now + WAIT), "b's turn starts");
    assert_eq!(fair.deadline("s"), Some(s_deadline), "s keeps its deadline");
    assert_eq!(fair.acquire(5, "b"), Acquire::Acquired);
    assert_eq!(fair.deadline("s"), Some(s_deadline - WAIT), "and loses b's wait when b takes its turn, as in Redisson");
}

/// A lease that runs out starts the head's turn at the server's next look
/// (a timer at the lease's end): it is told, and a native head gets its
/// wait from then, not from a deadline kept up past the lease.
#[test]
fn a_lease_running_out_starts_the_heads_turn() {
    let mut fair = Fair::new();
    fair.acquire(0, "a");
    fair.acquire(1, "b");
    assert!(matches!(fair.acquire(LEASE - 10, "b"), Acquire::Queued { .. }));
    let tick = fair.tick(0, &[]);
    assert_eq!(tick.next_at, Some(T0 + LEASE + 1), "look at the lease's end");
    let tick = fair.tick(tick.next_at.unwrap() - fair.now, &[]);
    assert!(fair.keys.effects.contains(&"PUBLISH redisson_lock__channel:{f}:b 0".to_owned()), "b is told");
    assert_eq!(fair.deadline("b"), Some(fair.now + WAIT));
    assert_eq!(tick.next_at, Some(fair.now + WAIT + 1));
    fair.tick(1, &[]);
    assert!(fair.keys.effects.is_empty(), "told once: {:?}", fair.keys.effects);
}

/// A blocked waiter is alive whatever its deadline says: a stall kept the
/// server from keeping it up.
#[test]
fn a_blocked_waiter_outlives_its_deadline() {
    let mut fair = Fair::new();
    fair.acquire(0, "a");
    fair.acquire(1, "b");
    fair.waits.set_blocked(b"b", WAIT);
    let stalled = fair.deadline("b").unwrap() - fair.now + 5_000;
    assert!(matches!(fair.acquire(stalled, "c"), Acquire::Queued { .. }), "a's lease ran out; b is still ahead");
    assert_eq!(fair.queue(), ["b", "c"]);
    fair.waits.clear_blocked(b"b");
    assert_eq!(fair.acquire(WAIT + 1, "c"), Acquire::Acquired, "once it no longer blocks, its deadline counts");
}

/// A blocked waiter told its acquire failed (the key stopped being a fair
/// lock) is not coming back: once the lock is a lock again, the next
/// command purges its place instead of waiting out its deadline.
#[test]
fn a_waiter_told_its_acquire_failed_is_purged_by_the_next_command() {
    let mut fair = Fair::new();
    fair.acquire(0, "a");
    fair.acquire(1, "b");
    fair.waits.set_blocked(b"b", WAIT);
    fair.waits.set_gone(b"b");
    fair.release(1, "a");
    assert_eq!(fair.acquire(1, "c"), Acquire::Acquired, "b's deadline is still ahead, but b is gone");
    assert_eq!(fair.queue(), Vec::<String>::new());
    assert!(matches!(fair.acquire(1, "b"), Acquire::Queued { .. }), "b may ask again");
    assert_eq!(fair.queue(), ["b"]);
}

/// A lock-delay: the free lock goes to nobody before the delay's end,
/// waiters queue in arrival order with the delay's rest as their hint, and
/// the server's look at the end grants the blocked head.
#[test]
fn a_lock_delay_holds_the_queue_until_its_end_then_grants_in_order() {
    let mut fair = Fair::new();
    fair.delay_end = T0 + 1_000;
    assert_eq!(fair.acquire(0, "a"), Acquire::Queued { hint_ms: 1_000 });
    assert_eq!(fair.acquire(100, "b"), Acquire::Queued { hint_ms: WAIT / 2 });
    assert_eq!(fair.queue(), ["a", "b"]);
    let blocked = [Blocked { owner: b"a", lease_ms: LEASE, wait_ms: WAIT }];
    let tick = fair.tick(0, &blocked);
    assert_eq!((tick.granted, tick.told, tick.next_at), (None, None, Some(T0 + 1_001)));
    let tick = fair.tick(tick.next_at.unwrap() - fair.now, &blocked);
    assert_eq!(tick.granted.as_deref(), Some(b"a".as_slice()), "the head's turn comes at the delay's end");
    assert_eq!(fair.queue(), ["b"]);
}

/// A holder's re-entry waits for a lock-delay's end too (its release may
/// have been lost with the old primary), and is not queued behind the
/// waiters its own hold keeps out.
#[test]
fn a_lock_delay_defers_a_holders_re_entry_to_its_end_unqueued() {
    let mut fair = Fair::new();
    assert_eq!(fair.acquire(0, "a"), Acquire::Acquired);
    fair.delay_end = fair.now + 1_000;
    assert_eq!(fair.acquire(0, "a"), Acquire::Deferred { pttl_ms: 1_000 });
    assert_eq!(fair.queue(), Vec::<String>::new());
    assert_eq!(fair.acquire(1_000, "a"), Acquire::Reentered { count: 2 });
}
