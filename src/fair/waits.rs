//! What the server knows of a fair lock's native waiters beyond the keys
//! (memory, not data): their waits, the deadlines it gave them, and how
//! their deadlines and hints are reckoned.

use super::queue::Waiters;
use std::collections::HashMap;

/// How a queued caller's deadline in the queue and its hint are reckoned.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub enum Hints {
    /// rlock's own: the deadline in the queue is the one the server keeps
    /// the waiter alive to (kept up by its polls, from its turn), and a
    /// waiter behind the head asks again within half its wait.
    #[default]
    Native,
    /// Redisson's, for its waiting script rewritten by the filter: the
    /// deadline in the queue follows Redisson's arithmetic, and the hint is
    /// the one its script replies (a newcomer's TTL follows the leases and
    /// waits ahead of it), never below 1 ms. The server keeps such a waiter
    /// alive in memory as a native one (its polls, its turn).
    Redisson(AskedAgain),
}

/// What Redisson's script replies a waiter that asks again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskedAgain {
    /// The lock's PTTL (3.32.0 and later).
    Pttl,
    /// The time to the deadline of the waiter ahead, as its own deadline
    /// less its wait tells it (3.11.1 .. 3.31.0).
    Ahead,
}

/// A waiting caller's `WAIT`, and how it is reckoned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wait {
    pub ms: i64,
    pub hints: Hints,
}

#[cfg(test)]
impl Wait {
    pub fn native(ms: i64) -> Self {
        Self { ms, hints: Hints::Native }
    }

    pub fn redisson(ms: i64) -> Self {
        Self { ms, hints: Hints::Redisson(AskedAgain::Pttl) }
    }
}

/// What the server knows of its own waiters beyond the keys: the `WAIT`
/// each native waiter last sent, so that a woken head gets exactly its
/// wait from its turn, and the deadline the server last gave it, which a
/// script may lower but not below that. The server never sees the wait of
/// a waiter queued by Redisson's script, nor keeps these across a restart
/// or failover (memory, not data): such a head keeps the deadline
/// Redisson's release leaves it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Waits(HashMap<Vec<u8>, Known>);

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Known {
    wait_ms: i64,
    hints: Hints,
    /// The deadline the server last gave it (0: none yet).
    deadline: i64,
    /// Blocked on the server: alive whatever its deadline says (a stall
    /// may have kept the server from keeping it up).
    blocked: bool,
    /// Told by the server that its acquire failed (the key stopped being
    /// a fair lock): it is not coming back, so it is dead whatever its
    /// deadline says, until it asks again.
    gone: bool,
}

impl Waits {
    pub fn record(&mut self, owner: &[u8], wait: Wait) {
        let known = self.0.entry(owner.to_vec()).or_default();
        known.wait_ms = wait.ms;
        known.hints = wait.hints;
        known.gone = false;
    }

    /// How `owner`'s deadline is reckoned; `None`: not known to the server
    /// (a waiter of Redisson's script run as Lua).
    pub fn hints(&self, owner: &[u8]) -> Option<Hints> {
        self.0.get(owner).map(|known| known.hints)
    }

    pub fn get(&self, owner: &[u8]) -> Option<i64> {
        self.0.get(owner).map(|known| known.wait_ms)
    }

    /// The deadline a live native waiter has at least at `now`: the one
    /// the server gave it, and a blocked one's wait from now.
    pub(super) fn deadline(&self, owner: &[u8], now_ms: i64) -> Option<i64> {
        let known = self.0.get(owner).filter(|known| !known.gone)?;
        let alive = if known.blocked { now_ms.saturating_add(known.wait_ms) } else { 0 };
        Some(known.deadline.max(alive)).filter(|deadline| *deadline > now_ms)
    }

    /// Whether the server alone decides until when `owner` is alive: one
    /// of Redisson's waiters it gave a deadline (see [`Hints::Redisson`]).
    pub(super) fn keeps_alive(&self, owner: &[u8]) -> bool {
        self.0
            .get(owner)
            .is_some_and(|known| matches!(known.hints, Hints::Redisson(_)) && (known.deadline > 0 || known.blocked))
    }

    /// Marks `owner`, of wait `wait_ms`, blocked on the server.
    pub fn set_blocked(&mut self, owner: &[u8], wait_ms: i64) {
        let known = self.0.entry(owner.to_vec()).or_default();
        known.wait_ms = wait_ms;
        known.blocked = true;
        known.gone = false;
    }

    /// `owner`'s blocked call was told its acquire failed: its place is
    /// purged by the next command on the lock, as a dead waiter's.
    pub fn set_gone(&mut self, owner: &[u8]) {
        if let Some(known) = self.0.get_mut(owner) {
            known.blocked = false;
            known.gone = true;
        }
    }

    /// Whether `owner` was told its acquire failed and has not asked since.
    pub(super) fn is_gone(&self, owner: &[u8]) -> bool {
        self.0.get(owner).is_some_and(|known| known.gone)
    }

    /// `owner` no longer blocks (it may still poll).
    pub fn clear_blocked(&mut self, owner: &[u8]) {
        if let Some(known) = self.0.get_mut(owner) {
            known.blocked = false;
        }
    }

    /// Forgets the owners that are no longer queued, and remembers the
    /// deadlines of the others as a command leaves them.
    pub fn sync(&mut self, waiters: &Waiters) {
        if self.0.is_empty() {
            return;
        }
        self.0.retain(|owner, known| match waiters.deadline(owner) {
            Some(deadline) => {
                known.deadline = deadline;
                true
            }
            None => false,
        });
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
