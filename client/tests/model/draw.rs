//! Drawing the steps: an operation the model's state allows, by weight.

use super::*;

impl Model {
    pub(super) fn draw(&self, rng: &mut Rng, kinds: &[(&'static str, u64)]) -> Op {
        let may_reconnect = kinds.iter().any(|(kind, _)| *kind == "client");
        if let Some(slot) = (0..CLIENTS).find(|&s| self.slots[s].client.is_none()) {
            if may_reconnect && rng.chance(15) {
                return Op::NewClient { slot };
            }
        }
        for _ in 0..1000 {
            let kind = pick_weighted(rng, kinds);
            if let Some(op) = self.propose(rng, kind) {
                return op;
            }
        }
        self.fail("RLOCK_MODEL_OPS allows no operation in this state")
    }

    fn propose(&self, rng: &mut Rng, kind: &str) -> Option<Op> {
        let mut at = At {
            slot: rng.below(CLIENTS as u64) as usize,
            lock: rng.below(LOCKS.len() as u64) as usize,
            handle: rng.below(HANDLES as u64) as usize,
        };
        // Often the owner of an existing guard: reentry, and re-locking
        // after the hold was deleted, are where bookkeeping goes wrong.
        if !self.guards.is_empty() && rng.chance(40) {
            at = self.owners[&rng.pick(&self.guards).owner].at;
        }
        let lease_ms = 200 + rng.below(LONGEST_LEASE_MS - 199);
        let guard = (!self.guards.is_empty()).then(|| rng.pick(&self.guards).id);
        let task = (!self.pending.is_empty()).then(|| rng.pick(&self.pending).id);
        let lock = rng.below(LOCKS.len() as u64) as usize;
        match kind {
            "try_lock" => {
                let via = *rng.pick(&[Via::Handle, Via::Clone, Via::SameOwner]);
                let wait_ms = if rng.chance(50) { 0 } else { 50 + rng.below(251) };
                let lease_ms = rng.chance(30).then_some(lease_ms);
                let via = if self.slots[at.slot].client.is_none() { Via::Handle } else { via };
                self.may_acquire(at, lease_ms.is_some()).then_some(Op::TryLock { at, via, wait_ms, lease_ms })
            }
            "lock_with_lease" => {
                self.may_acquire(at, true).then_some(Op::LockWithLease { at, lease_ms, bound_ms: 200 + rng.below(601) })
            }
            "spawn_lock" => {
                (self.pending.len() < MAX_PENDING && self.may_acquire(at, false)).then_some(Op::SpawnLock { at })
            }
            "collect" => task.map(|task| Op::Collect { task }),
            "abort" => task.map(|task| Op::Abort { task }),
            "unlock" => guard.map(|guard| Op::Unlock { guard }),
            "drop" => guard.map(|guard| Op::Drop { guard }),
            "delete" => Some(Op::Delete { lock }),
            "force_release" => Some(Op::ForceRelease { lock }),
            "restart" => Some(Op::Restart { lose_data: rng.chance(25) }),
            "stall" => None, // drawn apart: it wraps a step
            "client" => {
                let slot = at.slot;
                Some(if self.slots[slot].client.is_none() { Op::NewClient { slot } } else { Op::DropClient { slot } })
            }
            other => panic!("unknown operation kind {other:?} in RLOCK_MODEL_OPS"),
        }
    }

    /// Whether an acquire through `at` keeps every owner's holds of one
    /// renewal kind: a fixed lease shared with other holds (reentry resets
    /// the key's TTL) has no single meaning, so the model avoids it.
    fn may_acquire(&self, at: At, fixed: bool) -> bool {
        if self.guards.len() >= MAX_GUARDS {
            return false;
        }
        let owner = self.handle(at).owner();
        let mine = || self.guards.iter().filter(|g| g.lock == at.lock && g.owner == owner);
        let fixed_active =
            mine().any(|g| g.lease_ends.is_some_and(|(_, latest)| !g.guard.is_lost() || Instant::now() < latest));
        let watchdog_live = mine().any(|g| g.lease_ends.is_none() && !g.guard.is_lost());
        let pending = self.pending.iter().any(|p| p.at.lock == at.lock && p.owner == owner);
        !fixed_active && !(fixed && (watchdog_live || pending))
    }
}

fn pick_weighted(rng: &mut Rng, kinds: &[(&'static str, u64)]) -> &'static str {
    let total: u64 = kinds.iter().map(|(_, weight)| weight).sum();
    let mut draw = rng.below(total.max(1));
    for (kind, weight) in kinds {
        if draw < *weight {
            return kind;
        }
        draw -= weight;
    }
    panic!("RLOCK_MODEL_OPS selects no known operation kind")
}
