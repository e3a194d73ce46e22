//! The failover settings docs/safety.md recommends ("Failover settings"),
//! which the Sentinel group and the fault suite run with: one place, so
//! that the suite measures what the docs tell operators to set
//! (`faults/tests/failover_settings.rs` checks the two agree).

/// `min-replicas-to-write`: a primary with no replica in reach refuses writes.
pub const MIN_REPLICAS_TO_WRITE: u32 = 1;
/// `min-replicas-max-lag`, in whole seconds (Redis counts it so).
pub const MIN_REPLICAS_MAX_LAG_S: u64 = 1;
/// Sentinel's `down-after-milliseconds`: above the lag, so that a primary
/// cut off stops taking writes before Sentinel acts.
pub const DOWN_AFTER_MS: u64 = 2_000;
/// The servers' `hz` (Redis's default): the module's cron, which watches
/// for stalls, runs every `1000 / hz` ms.
pub const HZ: u32 = 10;
/// `rlock.stall-ms`: just below [`DOWN_AFTER_MS`], so only a stall that can
/// hide a failover starts the lock-delay again.
pub const STALL_MS: u64 = 1_900;

/// `rlock.lock-delay-ms` for holds of `lease_ms`: the lease, plus how long
/// a primary cut off from its replicas may still take writes (the max lag,
/// a second for the replicas' last acknowledgement, a second for the
/// primary to look).
pub const fn lock_delay_ms(lease_ms: u64) -> u64 {
    lease_ms + MIN_REPLICAS_MAX_LAG_S * 1_000 + 2_000
}

/// The server settings above, as `--name value` pairs.
pub fn min_replicas_config() -> Vec<(String, String)> {
    [
        ("min-replicas-to-write", MIN_REPLICAS_TO_WRITE.to_string()),
        ("min-replicas-max-lag", MIN_REPLICAS_MAX_LAG_S.to_string()),
        ("hz", HZ.to_string()),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value))
    .collect()
}

/// The module arguments for holds of `lease_ms`: the lock-delay and the
/// stall threshold.
pub fn lock_delay_args(lease_ms: u64) -> Vec<String> {
    ["lock-delay-ms".to_owned(), lock_delay_ms(lease_ms).to_string(), "stall-ms".to_owned(), STALL_MS.to_string()]
        .into()
}
