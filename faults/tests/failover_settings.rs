//! docs/safety.md's "Failover settings" table can be followed literally:
//! its values keep the rules between them (the lag in whole seconds below
//! Sentinel's down-after, stall-ms below down-after and above two cron
//! periods, the lock-delay covering the lease, the lag and 2 s), and the
//! fault suite runs the same values (`testkit::failover`).

use rlock_faults::setups;
use rlock_faults::workload::LEASE;
use std::collections::HashMap;
use testkit::failover;

/// The table's settings and values, by the setting's name as the table
/// spells it (backticks dropped).
fn documented() -> HashMap<String, u64> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/safety.md");
    let text = std::fs::read_to_string(path).expect("docs/safety.md");
    let section = text.split_once("### Failover settings").expect("a \"Failover settings\" section").1;
    let rows = section.lines().skip_while(|line| !line.starts_with('|')).take_while(|line| line.starts_with('|'));
    rows.skip(2) // the header and its rule
        .map(|row| {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let value = cells[3].parse().unwrap_or_else(|_| panic!("not a number in {row}"));
            (cells[1].replace('`', ""), value)
        })
        .collect()
}

#[test]
fn the_documented_failover_settings_keep_their_rules() {
    let table = documented();
    let value = |name: &str| *table.get(name).unwrap_or_else(|| panic!("{name} missing from the table: {table:?}"));
    let (lag_s, down_after, hz, stall, lease, delay) = (
        value("min-replicas-max-lag"),
        value("down-after-milliseconds"),
        value("hz"),
        value("rlock.stall-ms"),
        value("lease"),
        value("rlock.lock-delay-ms"),
    );
    assert!(value("min-replicas-to-write") >= 1, "a cut-off primary must refuse writes");
    assert!(lag_s * 1_000 < down_after, "the lag ({lag_s} s) must end before Sentinel acts ({down_after} ms)");
    assert!(stall < down_after, "stall-ms {stall} must be below down-after {down_after}");
    assert!(stall >= 2_000 / hz, "stall-ms {stall}: a gap under two cron periods (hz {hz}) never counts");
    assert!(delay >= lease + lag_s * 1_000 + 2_000, "lock-delay {delay} must cover lease {lease}, the lag and 2 s");
    assert_eq!(table.len(), 7, "one row per setting: {table:?}");
}

#[test]
fn the_fault_suite_runs_the_documented_settings() {
    let table = documented();
    assert_eq!(table["min-replicas-to-write"], u64::from(failover::MIN_REPLICAS_TO_WRITE));
    assert_eq!(table["min-replicas-max-lag"], failover::MIN_REPLICAS_MAX_LAG_S);
    assert_eq!(table["down-after-milliseconds"], failover::DOWN_AFTER_MS);
    assert_eq!(table["hz"], u64::from(failover::HZ));
    assert_eq!(table["rlock.stall-ms"], failover::STALL_MS);
    assert_eq!(table["rlock.lock-delay-ms"], failover::lock_delay_ms(table["lease"]), "the same rule");
    // The suite's own lease is shorter; its lock-delay follows the rule.
    let suite_lease = LEASE.as_millis() as u64;
    assert_eq!(setups::lock_delay_ms(), suite_lease + failover::MIN_REPLICAS_MAX_LAG_S * 1_000 + 2_000);
    let recommended = setups::recommended();
    let config: HashMap<&str, &str> =
        recommended.config.iter().map(|(name, value)| (name.as_str(), value.as_str())).collect();
    assert_eq!(config["min-replicas-to-write"], table["min-replicas-to-write"].to_string());
    assert_eq!(config["min-replicas-max-lag"], table["min-replicas-max-lag"].to_string());
    assert_eq!(config["hz"], table["hz"].to_string());
    let args = recommended.module_args.join(" ");
    assert!(args.contains(&format!("stall-ms {}", table["rlock.stall-ms"])), "module args: {args}");
    assert!(args.contains(&format!("lock-delay-ms {}", setups::lock_delay_ms())), "module args: {args}");
}
