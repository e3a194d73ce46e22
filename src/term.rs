//! This server's term as a primary: when it last became one. A start or
//! restart begins a term (the data it loaded may be older than what
//! clients saw), and so does a replica's promotion. Fenced tokens given in
//! a term are at least its floor ([`crate::fenced::term_floor`]), so they
//! are greater than any an earlier primary gave; for the term's first
//! `rlock.lock-delay-ms`, nothing new is granted ([`crate::delay`]). A
//! stall of `rlock.stall-ms` or more starts the delay again (not the term:
//! this server may still be the primary).

use crate::api::subscribe_to_server_event;
use crate::config;
use crate::delay::{stalled, Delay};
use crate::fenced::term_floor;
use crate::primitive;
use crate::store::now_ms;
use linkme::distributed_slice;
use redis_module::server_events::{ServerRole, CONFIG_CHANGED_SERVER_EVENTS_LIST, ROLE_CHANGED_SERVER_EVENTS_LIST};
use redis_module::{raw, Context};
use std::os::raw::c_void;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

/// When the current term began (Unix ms); 0 before the module's load.
static TERM_START_MS: AtomicI64 = AtomicI64::new(0);
/// Role changes seen since the module loaded, either way.
static ROLE_CHANGES: AtomicU64 = AtomicU64::new(0);
/// When the event loop was last seen running ([`monotonic_ms`]): by the
/// server's cron, or a look at the delay.
static LAST_SEEN_MS: AtomicI64 = AtomicI64::new(0);
/// The server cron's period (1000 / `hz` ms), as its last run told.
static CRON_PERIOD_MS: AtomicI64 = AtomicI64::new(100);
/// When the last stall ended (Unix ms); 0 before any.
static STALL_ENDED_MS: AtomicI64 = AtomicI64::new(0);
/// Stalls seen since the module loaded.
static STALLS: AtomicU64 = AtomicU64::new(0);

/// The module loaded: a start or a restart begins a term. Returns false
/// when the server's cron cannot be followed, which stalls need.
pub fn begin(ctx: &Context) -> bool {
    begin_term();
    LAST_SEEN_MS.store(monotonic_ms(), Ordering::Relaxed);
    // The cron, not a timer of the module's own: a pending timer would
    // keep MODULE UNLOAD from unloading the module.
    subscribe_to_server_event(ctx, raw::REDISMODULE_EVENT_CRON_LOOP, cron)
}

fn begin_term() {
    TERM_START_MS.store(now_ms(), Ordering::Relaxed);
}

/// The server's cron (`hz` times a second): notes that the event loop
/// runs; after a stall, wakes whatever waits for the delay's end, which
/// has moved.
unsafe extern "C" fn cron(ctx: *mut raw::RedisModuleCtx, _: raw::RedisModuleEvent, _: u64, data: *mut c_void) {
    let hz = unsafe { &*data.cast::<raw::RedisModuleCronLoopInfo>() }.hz;
    // The gap since the last cron came at the old period: judged by it,
    // before a new one (a `CONFIG SET hz`) counts.
    let stalled = seen_running();
    CRON_PERIOD_MS.store(1_000 / i64::from(hz.max(1)), Ordering::Relaxed);
    if stalled {
        let ctx = Context::new(ctx);
        delay_moved(&ctx);
    }
}

/// Milliseconds on the monotonic clock since the module loaded: a step of
/// the wall clock is no stall, and does not hide one.
fn monotonic_ms() -> i64 {
    static LOADED: OnceLock<Instant> = OnceLock::new();
    LOADED.get_or_init(Instant::now).elapsed().as_millis() as i64
}

/// Notes that the event loop runs now; true when it had stalled, which
/// starts the lock-delay again. Called by the cron and before each look at
/// the delay, so that commands and grants queued during a stall (handled
/// on resumption before any timer) see it.
fn seen_running() -> bool {
    let now = monotonic_ms();
    let last_seen = LAST_SEEN_MS.swap(now, Ordering::Relaxed);
    if !stalled(last_seen, now, config::stall_ms(), CRON_PERIOD_MS.load(Ordering::Relaxed)) {
        return false;
    }
    STALL_ENDED_MS.store(now_ms(), Ordering::Relaxed);
    STALLS.fetch_add(1, Ordering::Relaxed);
    if config::lock_delay_ms() > 0 {
        redis_module::logging::log_warning(format!(
            "rlock: the server stood still for {} ms (rlock.stall-ms {}): a failover may have replaced it, so \
             the lock-delay starts again",
            now - last_seen,
            config::stall_ms()
        ));
    }
    true
}

/// Tells whatever waits for the lock-delay's end that it moved (a
/// promotion, a `CONFIG SET rlock.lock-delay-ms`): each primitive's hook.
fn delay_moved(ctx: &Context) {
    primitive::all().filter_map(|primitive| primitive.glue.delay_moved).for_each(|moved| moved(ctx));
}

#[distributed_slice(ROLE_CHANGED_SERVER_EVENTS_LIST)]
fn role_changed(ctx: &Context, role: ServerRole) {
    ROLE_CHANGES.fetch_add(1, Ordering::Relaxed);
    if role == ServerRole::Primary {
        begin_term();
        ctx.log_notice(&format!("rlock: promoted; fenced tokens from now on are at least {}", token_floor()));
        delay_moved(ctx);
    }
}

#[distributed_slice(CONFIG_CHANGED_SERVER_EVENTS_LIST)]
fn config_changed(ctx: &Context, names: &[&str]) {
    if names.contains(&"rlock.lock-delay-ms") {
        delay_moved(ctx);
    }
}

/// The least fenced token this term gives (0 with `rlock.fencing-token-jump no`).
pub fn token_floor() -> i64 {
    match config::fencing_token_jump() {
        true => term_floor(TERM_START_MS.load(Ordering::Relaxed)),
        false => 0,
    }
}

/// The lock-delay left now.
pub fn delay() -> Delay {
    delay_ends_at().map_or(Delay::OVER, |ends_at| Delay::left(ends_at - now_ms()))
}

/// When the lock-delay ends (Unix ms), while it lasts. It counts from the
/// term's start or the last stall's end, whichever is later, so a
/// `CONFIG SET` counts from there too.
pub fn delay_ends_at() -> Option<i64> {
    seen_running();
    let from = TERM_START_MS.load(Ordering::Relaxed).max(STALL_ENDED_MS.load(Ordering::Relaxed));
    let ends_at = from.saturating_add(config::lock_delay_ms());
    (config::lock_delay_ms() > 0 && ends_at > now_ms()).then_some(ends_at)
}

/// Stalls seen, for `INFO rlock`.
pub fn stalls() -> u64 {
    STALLS.load(Ordering::Relaxed)
}

/// Role changes seen, for `INFO rlock`.
pub fn role_changes() -> u64 {
    ROLE_CHANGES.load(Ordering::Relaxed)
}
