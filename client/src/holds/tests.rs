use super::*;

const WATCHDOG: Duration = Duration::from_secs(30);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Grants a hold with the lease the client would send.
fn grant(holds: &mut Holds, renewal: Renewal, lease: Duration, at: Instant, observed: Option<i64>) -> (Ticket, Ended) {
    let sent = holds.lease_for_acquire(lease, at, WATCHDOG);
    holds.granted(renewal, lease, sent, at, observed)
}

/// Whether the lease estimate has run out by `now`.
fn overdue(holds: &Holds, now: Instant) -> bool {
    holds.expires_at().is_some_and(|expires_at| expires_at <= now)
}

#[test]
fn a_short_reentry_never_cuts_the_outer_holds_lease() {
    let t0 = Instant::now();
    let mut holds = Holds::default();
    grant(&mut holds, Renewal::Watchdog, WATCHDOG, t0, None);
    assert_eq!(holds.lease_for_acquire(ms(300), t0, WATCHDOG), WATCHDOG);
    let (inner, _) = grant(&mut holds, Renewal::Fixed, ms(300), t0, Some(2));
    // The inner fixed hold goes: the outer watchdog hold still needs renewal.
    assert_eq!(holds.lease_for_release(&inner, t0 + ms(10), WATCHDOG, ms(300)), WATCHDOG);
    assert_eq!(holds.released(&inner, Released::OneLevel, Some(WATCHDOG), t0), Ended::No);
    assert_eq!(holds.upkeep(t0 + ms(400), WATCHDOG), Some(Upkeep::Renew(WATCHDOG)));
}

#[test]
fn upkeep_follows_every_hold() {
    let t0 = Instant::now();
    // (holds granted at t0 as (renewal, lease ms), ms after t0, upkeep)
    type Case = (&'static [(Renewal, u64)], u64, Option<Upkeep>);
    let cases: &[Case] = &[
        (&[], 0, None),
        (&[(Renewal::Fixed, 1_000)], 100, Some(Upkeep::Check)),
        (&[(Renewal::Watchdog, 30_000)], 100, Some(Upkeep::Renew(WATCHDOG))),
        // A fixed hold needing longer than the watchdog timeout keeps its lease.
        (&[(Renewal::Watchdog, 30_000), (Renewal::Fixed, 60_000)], 1_000, Some(Upkeep::Renew(ms(59_000)))),
        (&[(Renewal::Fixed, 60_000), (Renewal::Watchdog, 30_000)], 50_000, Some(Upkeep::Renew(WATCHDOG))),
    ];
    for (grants, at, expected) in cases {
        let mut holds = Holds::default();
        for (n, (renewal, lease)) in grants.iter().enumerate() {
            grant(&mut holds, *renewal, ms(*lease), t0, Some(n as i64 + 1));
        }
        assert_eq!(holds.upkeep(t0 + ms(*at), WATCHDOG), *expected, "{grants:?} at {at}");
    }
}

#[test]
fn releases_by_the_table() {
    // (holds before, reply, ended, holds after)
    let cases = [
        (1, Released::Fully, Ended::Released, 0),
        (2, Released::OneLevel, Ended::No, 1),
        (1, Released::NotHeld, Ended::Lost, 0),
        (2, Released::NotHeld, Ended::Lost, 0),
        // The server had fewer holds than counted: the others are lost.
        (2, Released::Fully, Ended::Lost, 0),
        // The server had more: nothing of ours is left.
        (1, Released::OneLevel, Ended::Released, 0),
    ];
    for (before, reply, ended, after) in cases {
        let t0 = Instant::now();
        let mut holds = Holds::default();
        let tickets: Vec<Ticket> =
            (1..=before).map(|n| grant(&mut holds, Renewal::Watchdog, WATCHDOG, t0, Some(n)).0).collect();
        let incarnation = holds.incarnation();
        assert_eq!(holds.released(&tickets[0], reply, Some(WATCHDOG), t0), ended, "{before} {reply:?}");
        assert_eq!(holds.count(), after, "{before} {reply:?}");
        assert_eq!(holds.incarnation() != incarnation, after == 0, "{before} {reply:?}");
        assert!(!holds.is_current(&tickets[0]));
    }
}

#[test]
fn a_stale_ticket_changes_nothing() {
    let t0 = Instant::now();
    let mut holds = Holds::default();
    let (stale, _) = grant(&mut holds, Renewal::Watchdog, WATCHDOG, t0, None);
    assert_eq!(holds.lose(stale.incarnation), Ended::Lost);
    let (current, _) = grant(&mut holds, Renewal::Watchdog, WATCHDOG, t0, None);
    assert!(!holds.is_current(&stale) && holds.is_current(&current));
    assert_eq!(holds.released(&stale, Released::Fully, Some(WATCHDOG), t0), Ended::No);
    assert_eq!(holds.forget(&stale), Ended::No);
    assert_eq!(holds.lose(stale.incarnation), Ended::No);
    assert_eq!(holds.count(), 1);
}

#[test]
fn a_grant_whose_count_disagrees_starts_afresh() {
    let t0 = Instant::now();
    let mut holds = Holds::default();
    let (old, _) = grant(&mut holds, Renewal::Watchdog, WATCHDOG, t0, None);
    // The key was deleted and this re-entry created it again: count 1, not 2.
    let (new, ended) = grant(&mut holds, Renewal::Watchdog, WATCHDOG, t0, Some(1));
    assert_eq!(ended, Ended::Lost);
    assert!(!holds.is_current(&old) && holds.is_current(&new));
    assert_eq!(holds.count(), 1);
    let (_, ended) = grant(&mut holds, Renewal::Watchdog, WATCHDOG, t0, Some(2));
    assert_eq!((ended, holds.count()), (Ended::No, 2));
}

#[test]
fn leases_run_out_by_the_clock() {
    let t0 = Instant::now();
    let mut holds = Holds::default();
    let (ticket, _) = grant(&mut holds, Renewal::Watchdog, ms(900), t0, None);
    assert!(!overdue(&holds, t0 + ms(899)) && overdue(&holds, t0 + ms(900)));
    holds.renewed(ticket.incarnation, t0 + ms(300), ms(900));
    assert!(!overdue(&holds, t0 + ms(1_100)) && overdue(&holds, t0 + ms(1_200)));
    holds.renewed(ticket.incarnation + 1, t0 + ms(600), ms(900));
    assert!(overdue(&holds, t0 + ms(1_200)), "a stale renewal moves nothing");
}

#[test]
fn the_last_command_sent_decides_the_lease() {
    let t0 = Instant::now();
    let mut holds = Holds::default();
    let (outer, _) = grant(&mut holds, Renewal::Watchdog, ms(900), t0, None);
    let (inner, _) = grant(&mut holds, Renewal::Fixed, ms(5_000), t0 + ms(10), Some(2));
    // A renewal for 5 s sent before the inner release (which cuts the
    // lease to 900 ms) has its reply handled after the release's.
    holds.released(&inner, Released::OneLevel, Some(ms(900)), t0 + ms(30));
    holds.renewed(outer.incarnation, t0 + ms(20), ms(5_000));
    assert!(overdue(&holds, t0 + ms(930)), "the release ran last on the server: its lease counts");
}

#[test]
fn a_release_that_sets_no_lease_leaves_the_estimate() {
    let t0 = Instant::now();
    let mut holds = Holds::default();
    grant(&mut holds, Renewal::Fixed, ms(900), t0, None);
    let (inner, _) = grant(&mut holds, Renewal::Fixed, ms(900), t0 + ms(10), Some(2));
    // A read release: the holds left keep the leases they had.
    holds.released(&inner, Released::OneLevel, None, t0 + ms(500));
    assert!(!overdue(&holds, t0 + ms(905)) && overdue(&holds, t0 + ms(910)), "the last acquire's lease");
}

#[test]
fn forgetting_the_last_hold_ends_the_incarnation() {
    let t0 = Instant::now();
    let mut holds = Holds::default();
    let (first, _) = grant(&mut holds, Renewal::Watchdog, WATCHDOG, t0, None);
    let (second, _) = grant(&mut holds, Renewal::Fixed, ms(500), t0, Some(2));
    assert_eq!(holds.forget(&second), Ended::No);
    assert_eq!(holds.forget(&first), Ended::Released);
    assert_eq!(holds.upkeep(t0, WATCHDOG), None);
}

#[test]
fn lost_replies_are_settled_by_the_count() {
    // (counted before, count read after, read ordered after the acquire, outcome)
    let cases = [
        (0, 0, true, Settled::NotGranted),
        (0, 1, true, Settled::Granted),
        (1, 2, true, Settled::Granted),
        // The earlier hold expired and the acquire took the lock afresh.
        (1, 1, true, Settled::Granted),
        (2, 1, true, Settled::Granted),
        // Someone else holds it: refused.
        (2, 0, true, Settled::NotGranted),
        // A count the acquire cannot explain: the read was not after it.
        (2, 2, true, Settled::NotGranted),
        (3, 2, true, Settled::NotGranted),
        // The read may have come before the acquire ran (or it never ran).
        (0, 0, false, Settled::NotGranted),
        (0, 1, false, Settled::Granted),
        (1, 1, false, Settled::NotGranted),
        (1, 2, false, Settled::Granted),
        (3, 4, false, Settled::Granted),
        (2, 1, false, Settled::Granted),
        (2, 0, false, Settled::NotGranted),
    ];
    for (counted, observed, ordered, outcome) in cases {
        assert_eq!(settle(counted, observed, ordered), outcome, "{counted} then {observed}, ordered {ordered}");
    }
}

#[test]
fn levels_given_up_on_the_clock_alone_are_claimed_by_the_next_counted_grant() {
    let t0 = Instant::now();
    // (holds given up by the clock, count observed after the next grant, levels to give back);
    // the grants were answered 400 ms after their send, so they may outlive the estimate by that.
    let cases = [(2, Some(3), 2), (2, Some(1), 0), (2, Some(2), 1), (2, Some(5), 2), (2, None, 0), (0, Some(3), 0)];
    for (given_up, observed, claimed) in cases {
        let mut holds = Holds::default();
        for _ in 0..given_up {
            grant(&mut holds, Renewal::Fixed, ms(100), t0, None);
            holds.answered(t0, t0 + ms(400));
        }
        let expired = holds.expire_overdue(t0 + ms(100));
        assert_eq!(expired, if given_up > 0 { Ended::Lost } else { Ended::No });
        assert_eq!(holds.unaccounted(t0 + ms(499)), given_up);
        assert_eq!(holds.unaccounted(t0 + ms(500)), 0, "surely expired on the server by then");
        assert_eq!(
            holds.claim_unaccounted(observed, t0 + ms(300)),
            claimed,
            "{given_up} given up, {observed:?} observed"
        );
        assert_eq!(holds.unaccounted(t0), if observed.is_some() { 0 } else { given_up });
    }
    // Levels that surely expired are not claimed: the extra count is someone else's.
    let mut holds = Holds::default();
    grant(&mut holds, Renewal::Fixed, ms(100), t0, None);
    holds.answered(t0, t0 + ms(1));
    holds.expire_overdue(t0 + ms(100));
    assert_eq!(holds.claim_unaccounted(Some(3), t0 + ms(101)), 0);
    // A grant never answered: no bound.
    let mut holds = Holds::default();
    grant(&mut holds, Renewal::Watchdog, ms(100), t0, None);
    holds.expire_overdue(t0 + ms(100));
    assert_eq!(holds.unaccounted(t0 + ms(3_600_000)), 1);
    // Renewals that went unanswered may still land, each before the
    // expiry it extends: each pushes the bound out by its lease, and the
    // levels are let go of after that (they were kept for the client's
    // lifetime before, a state per lock name).
    for (renewals_lost, bound) in [(1, 201), (2, 301)] {
        let mut holds = Holds::default();
        grant(&mut holds, Renewal::Watchdog, ms(100), t0, None);
        holds.answered(t0, t0 + ms(1));
        for _ in 0..renewals_lost {
            holds.unanswered(ms(100));
        }
        holds.expire_overdue(t0 + ms(100));
        assert_eq!(holds.unaccounted(t0 + ms(bound - 1)), 1, "{renewals_lost} renewals lost");
        assert_eq!(holds.unaccounted(t0 + ms(bound)), 0, "{renewals_lost} renewals lost");
    }
    // Not yet overdue: nothing is given up.
    let mut holds = Holds::default();
    grant(&mut holds, Renewal::Fixed, ms(100), t0, None);
    assert_eq!(holds.expire_overdue(t0 + ms(99)), Ended::No);
    assert_eq!((holds.count(), holds.unaccounted(t0)), (1, 0));
    // A refusal shows another owner has the lock: nothing of ours is left.
    holds.expire_overdue(t0 + ms(100));
    assert_eq!(holds.refused(), Ended::No);
    assert_eq!(holds.unaccounted(t0), 0);
    grant(&mut holds, Renewal::Fixed, ms(100), t0, None);
    assert_eq!(holds.refused(), Ended::Lost);
}
