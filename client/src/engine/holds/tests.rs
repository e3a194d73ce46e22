use super::*;

const WATCHDOG: Duration = Duration::from_secs(30);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Grants a hold with the lease the client would send; the server counts
/// `observed` levels after it.
fn grant(holds: &mut Holds, renewal: Renewal, lease: Duration, at: Instant, observed: i64) -> (Ticket, Ended) {
    let sent = holds.lease_for_acquire(lease, at, WATCHDOG);
    let (ticket, ended, orphaned) = holds.granted(renewal, lease, sent, at, observed);
    assert_eq!(orphaned, 0, "no level beyond the count");
    (ticket, ended)
}

/// Grants a hold on top of what `holds` counts, as the server counts it.
fn next(holds: &mut Holds, renewal: Renewal, lease: Duration, at: Instant) -> (Ticket, Ended) {
    let observed = holds.count() as i64 + 1;
    grant(holds, renewal, lease, at, observed)
}

/// Whether the lease estimate has run out by `now`.
fn overdue(holds: &Holds, now: Instant) -> bool {
    holds.expires_at().is_some_and(|expires_at| expires_at <= now)
}

#[test]
fn a_short_reentry_never_cuts_the_outer_holds_lease() {
    let t0 = Instant::now();
    let mut holds = Holds::default();
    next(&mut holds, Renewal::Watchdog, WATCHDOG, t0);
    assert_eq!(holds.lease_for_acquire(ms(300), t0, WATCHDOG), WATCHDOG);
    let (inner, _) = grant(&mut holds, Renewal::Fixed, ms(300), t0, 2);
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
            grant(&mut holds, *renewal, ms(*lease), t0, n as i64 + 1);
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
            (1..=before).map(|n| grant(&mut holds, Renewal::Watchdog, WATCHDOG, t0, n).0).collect();
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
    let (stale, _) = next(&mut holds, Renewal::Watchdog, WATCHDOG, t0);
    assert_eq!(holds.lose(stale.incarnation), Ended::Lost);
    let (current, _) = next(&mut holds, Renewal::Watchdog, WATCHDOG, t0);
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
    let (old, _) = next(&mut holds, Renewal::Watchdog, WATCHDOG, t0);
    // The key was deleted and this re-entry created it again: count 1, not 2.
    let (new, ended) = grant(&mut holds, Renewal::Watchdog, WATCHDOG, t0, 1);
    assert_eq!(ended, Ended::Lost);
    assert!(!holds.is_current(&old) && holds.is_current(&new));
    assert_eq!(holds.count(), 1);
    let (_, ended) = grant(&mut holds, Renewal::Watchdog, WATCHDOG, t0, 2);
    assert_eq!((ended, holds.count()), (Ended::No, 2));
}

#[test]
fn leases_run_out_by_the_clock() {
    let t0 = Instant::now();
    let mut holds = Holds::default();
    let (ticket, _) = next(&mut holds, Renewal::Watchdog, ms(900), t0);
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
    let (outer, _) = next(&mut holds, Renewal::Watchdog, ms(900), t0);
    let (inner, _) = grant(&mut holds, Renewal::Fixed, ms(5_000), t0 + ms(10), 2);
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
    next(&mut holds, Renewal::Fixed, ms(900), t0);
    let (inner, _) = grant(&mut holds, Renewal::Fixed, ms(900), t0 + ms(10), 2);
    // A read release: the holds left keep the leases they had.
    holds.released(&inner, Released::OneLevel, None, t0 + ms(500));
    assert!(!overdue(&holds, t0 + ms(905)) && overdue(&holds, t0 + ms(910)), "the last acquire's lease");
}

#[test]
fn forgetting_the_last_hold_ends_the_incarnation() {
    let t0 = Instant::now();
    let mut holds = Holds::default();
    let (first, _) = next(&mut holds, Renewal::Watchdog, WATCHDOG, t0);
    let (second, _) = grant(&mut holds, Renewal::Fixed, ms(500), t0, 2);
    assert_eq!(holds.forget(&second), Ended::No);
    assert_eq!(holds.forget(&first), Ended::Released);
    assert_eq!(holds.upkeep(t0, WATCHDOG), None);
}

#[test]
fn the_count_after_a_grant_settles_what_is_counted_here() {
    let t0 = Instant::now();
    // (holds counted before, count observed after the grant, owner id shared, ended, holds after, to give back)
    let cases = [
        (0, 1, false, Ended::No, 1, 0),
        (2, 3, false, Ended::No, 3, 0),
        // Levels nothing here counts (a lease given up on this clock, a
        // release whose reply was lost): this client's, given back.
        (0, 3, false, Ended::No, 1, 2),
        (1, 4, false, Ended::No, 2, 2),
        // With a shared owner id they may be another client's: kept.
        (0, 3, true, Ended::No, 1, 0),
        (1, 4, true, Ended::No, 2, 0),
        // Fewer: the earlier holds were lost, this grant started afresh.
        (2, 1, false, Ended::Lost, 1, 0),
        (2, 2, false, Ended::Lost, 1, 1),
        (2, 2, true, Ended::Lost, 1, 0),
    ];
    for (before, observed, shared, ended, after, orphaned) in cases {
        let mut holds = if shared { Holds::for_shared_owner() } else { Holds::default() };
        for _ in 0..before {
            next(&mut holds, Renewal::Fixed, ms(100), t0);
        }
        let granted = holds.granted(Renewal::Fixed, ms(100), ms(100), t0, observed);
        let case = format!("{before} counted, {observed} observed, shared {shared}");
        assert_eq!((granted.1, holds.count(), granted.2), (ended, after, orphaned), "{case}");
    }
}

#[test]
fn holds_given_up_on_the_clock_are_lost_and_a_refusal_ends_them() {
    let t0 = Instant::now();
    let mut holds = Holds::default();
    next(&mut holds, Renewal::Fixed, ms(100), t0);
    assert_eq!(holds.expire_overdue(t0 + ms(99)), Ended::No);
    assert_eq!(holds.expire_overdue(t0 + ms(100)), Ended::Lost);
    assert_eq!(holds.count(), 0);
    // A refusal shows another owner has the lock: nothing of ours is left.
    assert_eq!(holds.refused(), Ended::No);
    next(&mut holds, Renewal::Fixed, ms(100), t0);
    assert_eq!(holds.refused(), Ended::Lost);
}

#[test]
fn the_count_is_exact_only_while_no_level_can_stay_behind_on_the_server() {
    let t0 = Instant::now();
    // An owner id used before: unknown until a reply shows the count.
    let mut holds = Holds::default();
    assert!(!holds.counted_exactly());
    let (first, _) = next(&mut holds, Renewal::Fixed, ms(100), t0);
    assert!(holds.counted_exactly(), "the grant's reply showed the count");
    let (second, _) = next(&mut holds, Renewal::Fixed, ms(100), t0);
    assert!(holds.counted_exactly());
    // A release of unknown outcome: its level may stay behind.
    assert_eq!(holds.forget(&second), Ended::No);
    assert!(!holds.counted_exactly());
    next(&mut holds, Renewal::Fixed, ms(100), t0);
    assert_eq!(holds.released(&first, Released::Fully, Some(ms(100)), t0), Ended::Lost);
    assert!(holds.counted_exactly(), "the key is gone: no level left");

    // A minted owner id: none of its levels on the server yet.
    let mut holds = Holds::fresh();
    assert!(holds.counted_exactly());
    next(&mut holds, Renewal::Fixed, ms(100), t0);
    // A lease given up on this clock: the server may count it still.
    assert_eq!(holds.expire_overdue(t0 + ms(100)), Ended::Lost);
    assert!(!holds.counted_exactly());
    // Seen again, one level beyond the holds: to give back, maybe left.
    let (_, _, orphaned) = holds.granted(Renewal::Fixed, ms(100), ms(100), t0 + ms(200), 2);
    assert_eq!(orphaned, 1);
    assert!(!holds.counted_exactly());

    // A refusal of the owner's own re-entry (a lock-delay) leaves its levels.
    let mut holds = Holds::fresh();
    next(&mut holds, Renewal::Fixed, ms(100), t0);
    assert_eq!(holds.refused(), Ended::Lost);
    assert!(!holds.counted_exactly());
    // With nothing held, a refusal is another owner's hold: still none here.
    let mut holds = Holds::fresh();
    assert_eq!(holds.refused(), Ended::No);
    assert!(holds.counted_exactly());

    // Levels of a shared owner id are never counted exactly.
    let mut holds = Holds::for_shared_owner();
    next(&mut holds, Renewal::Fixed, ms(100), t0);
    assert!(!holds.counted_exactly());
}
