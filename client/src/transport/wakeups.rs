//! Which of one channel's waiters in this client a message wakes.
//! Redisson's rule: a release (`0`) wakes one waiter per client, so that a
//! hand-off costs one acquire attempt, not one per waiter; anything that may
//! have freed the lock for everyone (other messages, a reconnection) wakes
//! them all. A read-write lock's readers wake on every message: a `0` there
//! is a read release that freed the lock, and readers share it. A single
//! wake-up stays with its waiter until the waiter consumes it (its next
//! acquire attempt) or leaves, and then passes on: none is lost.

use std::collections::VecDeque;

/// A waiter's number within its channel.
pub(crate) type WaiterId = u64;

/// Which messages wake a waiter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WakeRule {
    /// `0` wakes one such waiter, any other message all of them.
    OneOnRelease,
    /// Every message wakes it.
    EveryMessage,
}

/// One channel's waiters, each with a waker `W` to call when it is woken.
pub(crate) struct Waiters<W> {
    /// In the order of their turn for the next single wake-up.
    queue: VecDeque<Waiter<W>>,
    next_id: WaiterId,
}

struct Waiter<W> {
    id: WaiterId,
    waker: W,
    rule: WakeRule,
    /// Handed a wake-up it has not consumed yet.
    woken: bool,
}

impl<W> Default for Waiters<W> {
    fn default() -> Self {
        Self { queue: VecDeque::new(), next_id: 0 }
    }
}

impl<W: Clone> Waiters<W> {
    /// Adds a waiter at the back of the queue.
    pub fn join(&mut self, waker: W, rule: WakeRule) -> WaiterId {
        let id = self.next_id;
        self.next_id += 1;
        self.queue.push_back(Waiter { id, waker, rule, woken: false });
        id
    }

    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Whether `id` holds a wake-up it has not consumed.
    pub fn is_woken(&self, id: WaiterId) -> bool {
        self.queue.iter().any(|waiter| waiter.id == id && waiter.woken)
    }

    /// The waiter is about to try again: its wake-up, if any, is used.
    pub fn consume(&mut self, id: WaiterId) {
        if let Some(waiter) = self.queue.iter_mut().find(|waiter| waiter.id == id) {
            waiter.woken = false;
        }
    }

    /// Hands out the wake-ups a `message` on the channel gives.
    pub fn wake(&mut self, message: &[u8]) -> Vec<W> {
        if message != b"0" {
            return self.wake_all();
        }
        let mut woken: Vec<W> = self
            .queue
            .iter_mut()
            .filter(|waiter| waiter.rule == WakeRule::EveryMessage)
            .map(|waiter| {
                waiter.woken = true;
                waiter.waker.clone()
            })
            .collect();
        woken.extend(self.wake_one());
        woken
    }

    /// Hands one wake-up to the first waiter in the queue woken one at a
    /// time that holds none, and sends it to the back. `None` when every
    /// such waiter holds one already: they will all try again anyway.
    fn wake_one(&mut self) -> Option<W> {
        let position = self.queue.iter().position(|waiter| waiter.rule == WakeRule::OneOnRelease && !waiter.woken)?;
        let mut waiter = self.queue.remove(position)?;
        waiter.woken = true;
        let waker = waiter.waker.clone();
        self.queue.push_back(waiter);
        Some(waker)
    }

    /// Hands every waiter a wake-up.
    pub fn wake_all(&mut self) -> Vec<W> {
        self.queue
            .iter_mut()
            .map(|waiter| {
                waiter.woken = true;
                waiter.waker.clone()
            })
            .collect()
    }

    /// Removes a waiter. A single wake-up it had not consumed goes to
    /// another waiter, whose waker is returned.
    pub fn leave(&mut self, id: WaiterId) -> Option<W> {
        let position = self.queue.iter().position(|waiter| waiter.id == id)?;
        let waiter = self.queue.remove(position)?;
        if waiter.woken && waiter.rule == WakeRule::OneOnRelease {
            self.wake_one()
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiters(names: &[&'static str]) -> (Waiters<&'static str>, Vec<WaiterId>) {
        let mut waiters = Waiters::default();
        let ids = names.iter().map(|name| waiters.join(*name, WakeRule::OneOnRelease)).collect();
        (waiters, ids)
    }

    #[test]
    fn single_wake_ups_go_round_the_waiters_in_order() {
        let (mut waiters, ids) = waiters(&["a", "b", "c"]);
        assert_eq!(waiters.wake(b"0").pop(), Some("a"));
        assert!(waiters.is_woken(ids[0]) && !waiters.is_woken(ids[1]));
        waiters.consume(ids[0]); // a tried and lost: it waits at the back
        assert_eq!(waiters.wake(b"0").pop(), Some("b"));
        assert_eq!(waiters.wake(b"0").pop(), Some("c"));
        assert_eq!(waiters.wake(b"0").pop(), Some("a"));
        assert_eq!(waiters.wake(b"0").pop(), None, "everyone holds a wake-up");
    }

    #[test]
    fn wake_all_reaches_everyone_and_consuming_clears_only_ones_own() {
        let (mut waiters, ids) = waiters(&["a", "b"]);
        assert_eq!(waiters.wake_all(), vec!["a", "b"]);
        waiters.consume(ids[1]);
        assert!(waiters.is_woken(ids[0]) && !waiters.is_woken(ids[1]));
    }

    #[test]
    fn a_leaving_waiter_passes_an_unconsumed_wake_up_on() {
        let (mut waiters, ids) = waiters(&["a", "b", "c"]);
        assert_eq!(waiters.wake(b"0").pop(), Some("a"));
        assert_eq!(waiters.leave(ids[0]), Some("b"), "a's wake-up goes to b");
        assert!(waiters.is_woken(ids[1]));
        waiters.consume(ids[1]);
        assert_eq!(waiters.leave(ids[1]), None, "a consumed wake-up is not passed on");
        assert_eq!(waiters.leave(ids[0]), None, "leaving twice is harmless");
        assert!(!waiters.is_empty());
        assert_eq!(waiters.leave(ids[2]), None);
        assert!(waiters.is_empty());
    }

    #[test]
    fn a_wake_up_passed_on_skips_waiters_that_hold_one() {
        let (mut waiters, ids) = waiters(&["a", "b", "c"]);
        waiters.wake(b"0").pop();
        waiters.wake(b"0").pop();
        assert_eq!(waiters.leave(ids[0]), Some("c"));
        assert_eq!(waiters.leave(ids[1]), None, "nobody left without a wake-up");
    }

    #[test]
    fn a_release_wakes_every_reader_and_one_other_waiter() {
        let mut waiters = Waiters::default();
        let writer_a = waiters.join("writer a", WakeRule::OneOnRelease);
        let reader_a = waiters.join("reader a", WakeRule::EveryMessage);
        let writer_b = waiters.join("writer b", WakeRule::OneOnRelease);
        let reader_b = waiters.join("reader b", WakeRule::EveryMessage);
        assert_eq!(waiters.wake(b"0"), vec!["reader a", "reader b", "writer a"]);
        assert!(!waiters.is_woken(writer_b));
        assert_eq!(waiters.leave(reader_a), None, "a reader's wake-up was everyone's: not passed on");
        assert_eq!(waiters.leave(writer_a), Some("writer b"), "a writer's single wake-up is");
        waiters.consume(writer_b);
        waiters.consume(reader_b);
        assert_eq!(waiters.wake(b"1"), vec!["reader b", "writer b"], "a write release wakes everyone");
    }
}
