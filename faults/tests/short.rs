//! The short fault run of `make test`: the recommended configuration
//! (lock-delay and min-replicas) grants no lock twice under kill -9,
//! SIGSTOP, a partition and a host crash that loses the last second of
//! replication, a slot migration grants no lock twice to callers blocked
//! on the server, and fencing turns away the late write of a holder
//! paused past its lease. One run each; `make faults` runs the
//! whole matrix. The partition and the host crash need root (iptables):
//! without it, they are left out, and the test says so.

use rlock_faults::partition::Partition;
use rlock_faults::run::{run, Fault};
use rlock_faults::setups;

#[test]
fn no_double_grant_in_the_recommended_configuration_and_no_stale_fenced_write() {
    let partition = Partition::available();
    if let Err(why) = &partition {
        eprintln!("short fault run: no partition or host crash (iptables needs root): {why}");
    }
    Partition::clean_leftovers();
    let failovers = [Fault::Kill, Fault::Stop, Fault::Partition, Fault::HostCrash];
    for fault in failovers.into_iter().filter(|fault| !fault.needs_iptables() || partition.is_ok()) {
        // Every run must be safe; one of two must also grant again in
        // time. On a loaded 2-core machine the Sentinels sometimes fail
        // over twice (the promoted primary misses its pings for the 1 s
        // down-after), and the second term's lock-delay can outlast the run.
        let mut granted_again = false;
        for seed in [1, 2] {
            let outcome = run(&setups::recommended(), fault, seed);
            eprintln!("recommended / {} (seed {seed}): {outcome:?}", fault.label());
            assert!(outcome.failover.is_some(), "{}: the Sentinels never failed over: {outcome:?}", fault.label());
            assert_eq!(outcome.overlaps.pairs, 0, "{}: a lock granted twice: {outcome:?}", fault.label());
            granted_again = outcome.first_grant.is_some();
            if granted_again {
                break;
            }
        }
        assert!(granted_again, "{}: nothing granted after the fault, twice", fault.label());
    }
    // A slot migration while callers wait on the server: the node the
    // slot left grants it to none of them (it did, and the next MIGRATE
    // failed BUSYKEY, before the module asked whether it serves the keys).
    let outcome = run(&setups::cluster_blocking(), Fault::SlotMigration, 1);
    eprintln!("cluster, blocking / slot migration: {outcome:?}");
    assert_eq!(outcome.overlaps.pairs, 0, "slot migration: a lock granted twice: {outcome:?}");
    assert!(outcome.first_grant.is_some(), "slot migration: nothing granted after it: {outcome:?}");
    // A holder paused past its lease: fencing turns its late write away.
    let outcome = run(&setups::fenced(), Fault::ClientPause, 1);
    eprintln!("fenced / client pause: {outcome:?}");
    assert_eq!(outcome.stale_accepted, 0, "{outcome:?}");
    assert!(outcome.rejected > 0 || outcome.overlaps.pairs == 0, "a late write got through: {outcome:?}");
}
