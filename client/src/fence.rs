//! The resource's side of fencing: a [`Fence`] admits a write only with a
//! token at least as high as the highest it has admitted.

use std::sync::atomic::{AtomicI64, Ordering};

/// Kept by the resource a fenced lock protects (one per lock name), it
/// turns away writes of a holder whose lock has passed to another: that
/// holder's token is lower than the one its successor wrote with. Tokens
/// come from [`Guard::token`](crate::Guard::token).
///
/// ```
/// let fence = rlock_client::Fence::default();
/// assert!(fence.admit(7));
/// assert!(fence.admit(7), "the same holder writes again");
/// assert!(fence.admit(9));
/// assert!(!fence.admit(7), "a stale holder is turned away");
/// ```
#[derive(Debug, Default)]
pub struct Fence {
    highest: AtomicI64,
}

impl Fence {
    /// Admits a write with `token` when it is at least the highest
    /// admitted so far (and then remembers it); false for a stale one.
    pub fn admit(&self, token: i64) -> bool {
        self.highest.fetch_max(token, Ordering::AcqRel) <= token
    }
}

#[cfg(test)]
mod tests {
    use super::Fence;

    #[test]
    fn a_fence_admits_tokens_that_do_not_go_back() {
        let fence = Fence::default();
        // (token, admitted)
        let steps = [(5, true), (5, true), (3, false), (8, true), (7, false), (8, true)];
        for (token, admitted) in steps {
            assert_eq!(fence.admit(token), admitted, "{token}");
        }
    }
}
