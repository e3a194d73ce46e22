//! The short fault run of `make test`: the recommended configuration
//! (lock-delay and min-replicas) grants no lock twice under kill -9,
//! SIGSTOP and a partition, and fencing with the token jump accepts no
//! stale write across a failover. One run each; `make faults` runs the
//! whole matrix. The partition needs root (iptables): without it, it is
//! left out, and the test says so.

use rlock_faults::partition::Partition;
use rlock_faults::run::{run, Fault};
use rlock_faults::setups;

#[test]
fn no_double_grant_in_the_recommended_configuration_and_no_stale_fenced_write() {
    let partition = Partition::available();
    if let Err(why) = &partition {
        eprintln!("short fault run: no partition (iptables needs root): {why}");
    }
    Partition::clean_leftovers();
    for fault in Fault::ALL.into_iter().filter(|fault| *fault != Fault::Partition || partition.is_ok()) {
        let outcome = run(&setups::recommended(), fault, 1);
        eprintln!("recommended / {}: {outcome:?}", fault.label());
        assert!(outcome.failover.is_some(), "{}: the Sentinels never failed over: {outcome:?}", fault.label());
        assert_eq!(outcome.overlaps.pairs, 0, "{}: a lock granted twice: {outcome:?}", fault.label());
        assert!(outcome.first_grant.is_some(), "{}: nothing granted after the fault: {outcome:?}", fault.label());
    }
    let fault = if partition.is_ok() { Fault::Partition } else { Fault::Stop };
    let outcome = run(&setups::fenced(), fault, 1);
    eprintln!("fenced / {}: {outcome:?}", fault.label());
    assert_eq!(outcome.stale_accepted, 0, "{}: {outcome:?}", fault.label());
}
