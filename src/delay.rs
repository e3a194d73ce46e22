//! Lock-delay, as Chubby's and Consul's: right after a server becomes a
//! primary, its data may be older than what clients were granted on the
//! primary before it, so for a while it grants nothing anywhere, not even
//! a re-entry: a hold in its data may be one whose release the old primary
//! took. Holders it has keep renewing and releasing.
//!
//! A refusal looks like contention whose lease ends with the delay, so
//! Redisson's clients wait and retry by themselves. The glue measures the
//! delay's rest with the server's clock when a command starts
//! ([`Delay::left_ms`]); the logic only asks whether it is over.

use std::sync::atomic::{AtomicU64, Ordering};

/// Acquires the delay refused, for `INFO rlock`.
static REFUSALS: AtomicU64 = AtomicU64::new(0);

/// The rest of the lock-delay when a command started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delay {
    left_ms: i64,
    /// Whether a refusal counts in `rlock_lock_delay_refusals`: a caller's
    /// acquire does, the server's own retries for its waiters do not.
    counted: bool,
}

impl Delay {
    /// Grants are open: no delay, or it is over.
    pub const OVER: Delay = Delay { left_ms: 0, counted: true };

    /// A delay with `left_ms` to run (none when not positive).
    pub fn left(left_ms: i64) -> Delay {
        Delay { left_ms: left_ms.max(0), counted: true }
    }

    /// The same delay, whose refusals are not counted (the server's own
    /// grant attempts for its waiters).
    pub fn quiet(self) -> Delay {
        Delay { counted: false, ..self }
    }

    /// Whether new holders are refused now.
    pub fn lasts(self) -> bool {
        self.left_ms > 0
    }

    /// The ms left; 0 when over.
    pub fn left_ms(self) -> i64 {
        self.left_ms
    }

    /// Whether a new holder is refused now; each refusal is counted.
    pub fn refuses(self) -> bool {
        if self.lasts() && self.counted {
            REFUSALS.fetch_add(1, Ordering::Relaxed);
        }
        self.lasts()
    }

    /// The PTTL a refused new holder is told: the holder's (`holder_pttl`,
    /// -2 for none) or the delay's rest, whichever ends later; a lock with
    /// no expiry (-1) stays -1. With no delay left, a missing lock's is 0.
    pub fn pttl(self, holder_pttl: i64) -> i64 {
        match holder_pttl {
            -1 => -1,
            pttl => pttl.max(self.left_ms),
        }
    }
}

/// Whether the event loop stood still from `last_seen_ms` to `now_ms`
/// for at least `stall_ms` (`rlock.stall-ms`; 0: never). The server's
/// cron notes every `cron_period_ms` that it runs, so a gap shorter than
/// two of those is not a stall.
pub fn stalled(last_seen_ms: i64, now_ms: i64, stall_ms: i64, cron_period_ms: i64) -> bool {
    stall_ms > 0 && now_ms - last_seen_ms >= stall_ms.max(2 * cron_period_ms)
}

/// Acquires refused by a lock-delay since the module loaded.
pub fn refusals() -> u64 {
    REFUSALS.load(Ordering::Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_told_the_later_of_the_holders_lease_and_the_delay() {
        let cases = [
            // (left_ms, holder_pttl, told)
            (500, -2, 500),  // free: the delay's rest
            (500, 200, 500), // the holder's lease ends first
            (500, 900, 900), // the delay ends first
            (500, -1, -1),   // no expiry: only a release frees it
            (0, -2, 0),      // over: a missing lock has no lease left
            (0, 200, 200),   // over: the holder's lease
            (0, -1, -1),     // over: still no expiry
        ];
        for (left_ms, holder_pttl, told) in cases {
            assert_eq!(Delay::left(left_ms).pttl(holder_pttl), told, "{left_ms} {holder_pttl}");
        }
    }

    #[test]
    fn only_a_lasting_delay_refuses_and_each_refusal_is_counted() {
        let before = refusals();
        assert!(!Delay::OVER.refuses());
        assert!(Delay::left(5).refuses());
        assert!(refusals() > before);
        assert!(Delay::left(5).quiet().refuses(), "refused, not counted");
    }

    #[test]
    fn a_stall_is_a_gap_of_at_least_the_setting_and_two_cron_periods() {
        let cases = [
            // (last_seen_ms, now_ms, stall_ms, cron_period_ms, stalled)
            (1_000, 1_100, 1_000, 100, false), // one cron's gap
            (1_000, 1_999, 1_000, 100, false),
            (1_000, 2_000, 1_000, 100, true),
            (1_000, 9_000, 0, 100, false),  // off
            (1_000, 1_150, 50, 100, false), // below two crons: the cron's own gap
            (1_000, 1_200, 50, 100, true),
            (1_000, 2_500, 1_000, 1_000, false), // hz 1: a cron a second
            (1_000, 3_000, 1_000, 1_000, true),
            (1_000, 900, 1_000, 100, false), // the clock went back
        ];
        for (last_seen, now, stall_ms, cron_ms, expected) in cases {
            assert_eq!(stalled(last_seen, now, stall_ms, cron_ms), expected, "{last_seen} {now} {stall_ms} {cron_ms}");
        }
    }

    #[test]
    fn a_delay_lasts_only_while_time_is_left() {
        assert!(Delay::left(1).lasts());
        assert!(!Delay::left(0).lasts());
        assert!(!Delay::left(-5).lasts());
        assert_eq!(Delay::left(-5), Delay::OVER);
    }
}
