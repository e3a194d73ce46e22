//! rlock: Redisson's reentrant lock as native Redis commands.
//!
//! `lock` holds the protocol rules (pure, unit-tested), `store` the lock key
//! in Redis (key API, replication, notifications), `commands` the handlers.

// Pure logic: unit-tested without Redis.
mod countdown;
mod delay;
mod error;
mod fair;
mod fast_multi;
mod fenced;
mod grammar;
mod handoff;
mod inspect;
mod keyspace;
mod keyword;
mod lease;
mod load_args;
mod lock;
mod permit_semaphore;
mod primitive;
mod redisson;
mod rwlock;
mod semaphore;
mod version;

// Redis glue: left out of unit-test builds, whose binaries cannot run the
// module's allocator; the integration tests cover it.
#[cfg(not(test))]
mod api;
#[cfg(not(test))]
mod commands;
#[cfg(not(test))]
mod config;
#[cfg(not(test))]
mod stats;
#[cfg(not(test))]
mod store;
#[cfg(not(test))]
mod term;

#[cfg(not(test))]
mod module {
    use crate::{api, commands, config, lease, load_args, redisson, stats, store, term};
    use redis_module::configuration::{ConfigurationContext, ConfigurationFlags};
    use redis_module::{redis_module, Context, RedisString, Status};

    fn init(ctx: &Context, args: &[RedisString]) -> Status {
        let args: Vec<&[u8]> = args.iter().map(RedisString::as_slice).collect();
        if let Err(why) = load_args::check(&args) {
            ctx.log_warning(&format!("rlock refuses to load: {why}"));
            return Status::Err;
        }
        if let Some(name) = api::missing_api() {
            ctx.log_warning(&format!("rlock needs {name}, which this server does not export"));
            return Status::Err;
        }
        if let Err(err) = commands::register(ctx) {
            ctx.log_warning(&format!("rlock: {err}"));
            return Status::Err;
        }
        if let Err(err) = redisson::filter::register(ctx) {
            ctx.log_warning(&format!("rlock: {err}"));
            return Status::Err;
        }
        if !crate::handoff::events::subscribe_to_swapdb(ctx) {
            ctx.log_warning("rlock: cannot subscribe to SWAPDB: waiters learn of a swap at their lock's expiry");
        }
        store::detect_server(ctx);
        store::set_module_options(ctx, store::is_valkey(ctx));
        if !term::begin(ctx) {
            ctx.log_warning("rlock: cannot follow the server's cron: a stall does not start the lock-delay again");
        }
        stats::show(stats::Gauges {
            kinds: crate::primitive::all().filter_map(|primitive| primitive.glue.stats).collect(),
            families: crate::primitive::families().collect(),
            role_changes: term::role_changes,
            fencing_token_floor: term::token_floor,
            lock_delay_left_ms: || term::delay().left_ms(),
            lock_delay_refusals: crate::delay::refusals,
            stalls: term::stalls,
            blocked: crate::handoff::blocking::waiting,
        });
        Status::Ok
    }

    /// `CONFIG SET rlock.redisson-scripts`: the filter is registered only
    /// while it is `native` (registering never fails on 7.0 and later).
    fn follow_redisson_setting(_: &ConfigurationContext, _: &str, _: &'static config::RedissonSetting) {
        if let Err(err) = redisson::filter::follow_setting() {
            redis_module::logging::log_warning(format!("rlock: {err}"));
        }
    }

    redis_module! {
        name: "rlock",
        version: crate::version::MODULE_VERSION,
        allocator: (redis_module::alloc::RedisAlloc, redis_module::alloc::RedisAlloc),
        data_types: [],
        init: init,
        // Each command registers itself: see commands::registry.
        commands: [],
        configurations: [
            i64: [
                [
                    load_args::DEFAULT_LEASE_MS,
                    &config::DEFAULT_LEASE_MS,
                    rlock_protocol::DEFAULT_LEASE_MS,
                    1,
                    lease::MAX_LEASE_MS,
                    ConfigurationFlags::DEFAULT,
                    None
                ],
                [
                    load_args::LOCK_DELAY_MS,
                    &config::LOCK_DELAY_MS,
                    0,
                    0,
                    lease::MAX_LEASE_MS,
                    ConfigurationFlags::DEFAULT,
                    None
                ],
                [
                    load_args::STALL_MS,
                    &config::STALL_MS,
                    1_000,
                    0,
                    lease::MAX_LEASE_MS,
                    ConfigurationFlags::DEFAULT,
                    None
                ],
            ],
            string: [],
            bool: [
                [
                    load_args::FENCING_TOKEN_JUMP,
                    &config::FENCING_TOKEN_JUMP,
                    true,
                    ConfigurationFlags::DEFAULT,
                    None
                ],
                [
                    load_args::DEADLOCK_DETECTION,
                    &config::DEADLOCK_DETECTION,
                    true,
                    ConfigurationFlags::DEFAULT,
                    None
                ],
            ],
            enum: [
                [
                    load_args::REDISSON_SCRIPTS,
                    &config::REDISSON_SCRIPTS,
                    redisson::default_setting(),
                    ConfigurationFlags::DEFAULT,
                    Some(Box::new(follow_redisson_setting))
                ],
            ],
            module_args_as_configuration: true,
        ]
    }
}
