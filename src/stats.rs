//! Counters shown in the `INFO rlock` section.

use crate::lock::{Acquire, ForceRelease, Release, Renew};
use crate::redisson::scripts::Family;
use linkme::distributed_slice;
use redis_module::server_events::INFO_COMMAND_HANDLER_LIST;
use redis_module::{InfoContext, RedisResult};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

static ACQUIRED: AtomicU64 = AtomicU64::new(0);
static REENTERED: AtomicU64 = AtomicU64::new(0);
static CONTENDED: AtomicU64 = AtomicU64::new(0);
static RELEASED: AtomicU64 = AtomicU64::new(0);
static RELEASED_REENTRY: AtomicU64 = AtomicU64::new(0);
static RELEASE_NOT_HELD: AtomicU64 = AtomicU64::new(0);
static RELEASE_LATCHED: AtomicU64 = AtomicU64::new(0);
static FORCE_RELEASED: AtomicU64 = AtomicU64::new(0);
static RENEWED: AtomicU64 = AtomicU64::new(0);
static RENEW_MISSED: AtomicU64 = AtomicU64::new(0);
static REDISSON_ACL_LUA: AtomicU64 = AtomicU64::new(0);
static REDISSON_FAIR_UNNAMED: AtomicU64 = AtomicU64::new(0);

/// Where an INFO field's value comes from: a counter of its own, or the
/// sum of one counter over every kind (each event is counted once, by its
/// kind).
enum Field {
    Counter(&'static AtomicU64),
    SumOfKinds(fn(&KindStats) -> &AtomicU64),
}

/// INFO field names (Redis prefixes them with `rlock_`), in display order.
const FIELDS: [(&str, Field); 15] = [
    ("acquired", Field::Counter(&ACQUIRED)),
    ("reentered", Field::Counter(&REENTERED)),
    ("contended", Field::Counter(&CONTENDED)),
    ("released", Field::Counter(&RELEASED)),
    ("released_reentry", Field::Counter(&RELEASED_REENTRY)),
    ("release_not_held", Field::Counter(&RELEASE_NOT_HELD)),
    // A release whose request id had a latch: it replied the recorded reply.
    ("release_latched", Field::Counter(&RELEASE_LATCHED)),
    ("force_released", Field::Counter(&FORCE_RELEASED)),
    ("renewed", Field::Counter(&RENEWED)),
    ("renew_missed", Field::Counter(&RENEW_MISSED)),
    // Blocked acquires (WAIT) granted the lock, and those whose wait ran
    // out, of every kind.
    ("granted", Field::SumOfKinds(|kind| &kind.waiter_grants)),
    ("wait_timeouts", Field::SumOfKinds(|kind| &kind.wait_timeouts)),
    // Callers told DEADLOCK instead of blocking, of every kind.
    ("deadlocks", Field::SumOfKinds(|kind| &kind.deadlocks)),
    // Known Redisson scripts left to Lua because the caller's ACL did not
    // allow the native command (those run natively: `redisson_native_*`).
    ("redisson_acl_lua", Field::Counter(&REDISSON_ACL_LUA)),
    // Redisson fair give-ups whose queue names two locks (`n` and `{n}`)
    // that the state did not tell apart: run without either lock's memory.
    ("redisson_fair_unnamed", Field::Counter(&REDISSON_FAIR_UNNAMED)),
];

impl Field {
    fn value(&self) -> u64 {
        match self {
            Field::Counter(counter) => counter.load(Ordering::Relaxed),
            Field::SumOfKinds(counter) => kinds().map(|kind| counter(kind).load(Ordering::Relaxed)).sum(),
        }
    }
}

/// What INFO shows that other parts of the module keep (the server's term,
/// the lock-delay, the callers blocked on the server, each primitive's
/// counters and Redisson scripts), handed in at load so that the counters
/// import none of them.
pub struct Gauges {
    pub kinds: Vec<&'static KindStats>,
    pub families: Vec<&'static Family>,
    pub role_changes: fn() -> u64,
    pub fencing_token_floor: fn() -> i64,
    pub lock_delay_left_ms: fn() -> i64,
    pub lock_delay_refusals: fn() -> u64,
    pub stalls: fn() -> u64,
    pub blocked: fn() -> usize,
}

static GAUGES: OnceLock<Gauges> = OnceLock::new();

/// Hands INFO its gauges (once, at load).
pub fn show(gauges: Gauges) {
    let _ = GAUGES.set(gauges);
}

/// Every kind's counters (none before load).
fn kinds() -> impl Iterator<Item = &'static KindStats> {
    GAUGES.get().into_iter().flat_map(|gauges| gauges.kinds.iter().copied())
}

/// Declares [`KindStats`] with its counters, each named once: the field,
/// its zero and its INFO name (`rlock_<kind>_<counter>`, in this order).
macro_rules! kind_counters {
    ($($counter:ident),* $(,)?) => {
        /// The counters of one kind of lock, shown as `rlock_<kind>_<counter>`.
        /// Each kind declares its own in its primitive's descriptor.
        pub struct KindStats {
            kind: &'static str,
            $($counter: AtomicU64,)*
        }

        impl KindStats {
            pub const fn new(kind: &'static str) -> Self {
                KindStats { kind, $($counter: AtomicU64::new(0),)* }
            }

            fn fields(&self) -> impl Iterator<Item = (&'static str, &AtomicU64)> {
                [$((stringify!($counter), &self.$counter),)*].into_iter()
            }
        }
    };
}

kind_counters!(acquired, refused, renew_refused, waiter_grants, wait_timeouts, deadlocks, lapsed_with_waiters);

impl KindStats {
    /// An acquire granted (a re-entry too), or refused (contention, a
    /// lock-delay).
    pub fn acquire(&self, granted: bool) {
        bump(if granted { &self.acquired } else { &self.refused });
    }

    /// A renewal that found no hold: a lost one.
    pub fn renew_refused(&self) {
        bump(&self.renew_refused);
    }

    /// A caller blocked on the server, granted after `waited_ms`.
    pub fn waiter_granted(&self, waited_ms: i64) {
        bump(&self.waiter_grants);
        record_wait(waited_ms);
    }

    pub fn wait_timeout(&self) {
        bump(&self.wait_timeouts);
    }

    pub fn deadlock(&self) {
        bump(&self.deadlocks);
    }

    /// A lock expired while callers waited for it on the server: its
    /// holder's lease ran out instead of a release.
    pub fn lapsed_with_waiters(&self) {
        bump(&self.lapsed_with_waiters);
    }
}

/// Server-side waits granted, by how long they waited: at most 1, 10,
/// 100, 1000, 10000 ms, and longer.
const WAIT_BUCKETS_MS: [i64; 5] = [1, 10, 100, 1_000, 10_000];
static WAITS: [AtomicU64; 6] = [const { AtomicU64::new(0) }; 6];

fn record_wait(waited_ms: i64) {
    let bucket = WAIT_BUCKETS_MS.iter().position(|le| waited_ms <= *le).unwrap_or(WAIT_BUCKETS_MS.len());
    bump(&WAITS[bucket]);
}

/// `le_1=…,le_10=…,…,inf=…`: each bucket's own count.
fn wait_histogram() -> String {
    let names = WAIT_BUCKETS_MS.iter().map(|le| format!("le_{le}")).chain(["inf".to_owned()]);
    names
        .zip(&WAITS)
        .map(|(name, count)| format!("{name}={}", count.load(Ordering::Relaxed)))
        .collect::<Vec<_>>()
        .join(",")
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

pub fn record_acquire(outcome: Acquire) {
    bump(match outcome {
        Acquire::Acquired => &ACQUIRED,
        Acquire::Reentered { .. } => &REENTERED,
        Acquire::Contended { .. } => &CONTENDED,
    });
}

pub fn record_renew(outcome: Renew) {
    bump(match outcome {
        Renew::Renewed => &RENEWED,
        Renew::NotHeld => &RENEW_MISSED,
    });
}

pub fn record_release(outcome: Release) {
    bump(match outcome {
        Release::Released => &RELEASED,
        Release::Decremented { .. } => &RELEASED_REENTRY,
        Release::NotHeld => &RELEASE_NOT_HELD,
        Release::Latched { .. } => &RELEASE_LATCHED,
    });
}

pub fn record_redisson_acl_lua() {
    bump(&REDISSON_ACL_LUA);
}

pub fn record_redisson_fair_unnamed() {
    bump(&REDISSON_FAIR_UNNAMED);
}

pub fn record_force_release(outcome: ForceRelease) {
    if outcome == ForceRelease::Released {
        bump(&FORCE_RELEASED);
    }
}

// The section builder always adds a section name, which Redis would turn
// into `rlock_<name>`; the plain calls give a section named `rlock`.
#[allow(deprecated)]
fn add_info(ctx: &InfoContext, _for_crash_report: bool) -> RedisResult<()> {
    ctx.add_info_section(None);
    for (name, field) in &FIELDS {
        ctx.add_info_field_long_long(name, field.value() as i64);
    }
    if let Some(gauges) = GAUGES.get() {
        // Redisson's scripts the filter ran as native commands, per primitive.
        for family in &gauges.families {
            let count = family.native.load(Ordering::Relaxed) as i64;
            ctx.add_info_field_long_long(&format!("redisson_native_{}", family.name), count);
        }
        // Failover: role changes seen, and the least fenced token of this term.
        ctx.add_info_field_long_long("role_changes", (gauges.role_changes)() as i64);
        ctx.add_info_field_long_long("fencing_token_floor", (gauges.fencing_token_floor)());
        // Lock-delay: what is left of it, and the acquires it refused.
        ctx.add_info_field_long_long("lock_delay_left_ms", (gauges.lock_delay_left_ms)());
        ctx.add_info_field_long_long("lock_delay_refusals", (gauges.lock_delay_refusals)() as i64);
        ctx.add_info_field_long_long("stalls", (gauges.stalls)() as i64);
        ctx.add_info_field_long_long("blocked", (gauges.blocked)() as i64);
    }
    // Per kind of lock, and the server-side waits by how long they took.
    for kind in kinds() {
        for (name, counter) in kind.fields() {
            ctx.add_info_field_long_long(&format!("{}_{name}", kind.kind), counter.load(Ordering::Relaxed) as i64);
        }
    }
    ctx.add_info_field_str("wait_ms_histogram", &wait_histogram());
    Ok(())
}

#[distributed_slice(INFO_COMMAND_HANDLER_LIST)]
static RLOCK_INFO: fn(&InfoContext, bool) -> RedisResult<()> = add_info;
