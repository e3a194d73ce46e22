//! Test and benchmark support for rlock. Not published.

mod acl_recipe;
mod cluster;
mod differential;
mod differential_filter;
mod differential_snapshot;
mod events;
pub mod failover;
mod info;
mod redisson_jar;
pub mod redisson_lock;
mod rng;
mod scripts;
mod sentinel;
mod server;
mod server_clock;
mod shared_server;
mod tracking;
mod twins;
mod until_ok;
mod wait;

pub use acl_recipe::{acl_log, acl_recipe, acl_recipe_names, newer_than_redis_7_0, AclRecipe};
pub use cluster::{has_atomic_slot_migration, slot_owner_among, Cluster, SlotMove};
pub use differential::{drive, At, Differential};
pub use differential_filter::{assert_same_reply, set_filter_mode, FilterStep, FilterTwins, Reply};
pub use differential_snapshot::{same_snapshots, snapshot, KeyState};
pub use events::{keyspace_events, publications};
pub use failover::DOWN_AFTER_MS;
pub use info::{calls, calls_async, info_field, info_field_async, rlock_info, rlock_info_async};
pub use redisson_jar::{redisson_class_scripts, redisson_scripts};
pub use rng::Rng;
pub use scripts::{release_channel, unlock_latch_key, Caller, FairScripts, RedissonScripts, RwScripts, UNLOCK_MESSAGE};
pub use scripts::{FencedScripts, LatchScripts, PermitSemaphoreScripts, SemaphoreScripts};
pub use sentinel::{primary_named_by, SentinelGroup, MASTER, PEER_SOURCE};
pub use server::{cli_bin, module_path, send_signal, server_bin, Server, ServerBuilder};
pub use server_clock::{lease_end_ms, until_server_time_past};
pub use shared_server::SharedServer;
pub use tracking::{invalidated, Tracker};
pub use twins::{
    expired_within, expiry_ends, flush_all, quiet_now, run_out, twin, Drift, Side, StepMessage, StepMessages,
};
pub use until_ok::until_ok;
pub use wait::{eventually, PATIENCE, POLL};

/// A server error as "CODE detail", the way redis-cli prints it, or a
/// panic when the result is not an error.
pub fn error_text<T: std::fmt::Debug>(result: redis::RedisResult<T>) -> String {
    match result {
        Ok(value) => panic!("expected an error reply, got {value:?}"),
        Err(err) => match (err.code(), err.detail()) {
            (Some(code), Some(detail)) => format!("{code} {detail}"),
            (Some(code), None) => code.to_owned(),
            _ => err.to_string(),
        },
    }
}

/// The fields of `MODULE LIST`'s entry for the module `name` (names and
/// values; `args`, an array, left out), `None` when it is not loaded.
/// Servers list modules of their own beside rlock: Redis 8 `vectorset`,
/// Valkey 9 its `lua` engine.
pub fn listed_module(con: &mut redis::Connection, name: &str) -> Option<Vec<String>> {
    let listed: Vec<Vec<redis::Value>> = redis::cmd("MODULE").arg("LIST").query(con).expect("MODULE LIST");
    listed
        .into_iter()
        .map(|entry| entry.into_iter().filter_map(|value| redis::from_redis_value(value).ok()).collect::<Vec<String>>())
        .find(|fields| fields.get(1).is_some_and(|listed_name| listed_name == name))
}

/// The server's clock (TIME) in Unix ms: the `now` to give Redisson's
/// scripts so that they and the module's commands read the same clock.
pub fn server_time_ms(con: &mut dyn redis::ConnectionLike) -> i64 {
    let (seconds, micros): (i64, i64) = redis::cmd("TIME").query(con).expect("TIME");
    seconds * 1000 + micros / 1000
}

/// The id of a client that `CLIENT LIST` (its reply, `client_list`) shows
/// blocked in `RLOCK.ACQUIRE … WAIT`.
pub fn blocked_acquire_client_id(client_list: &str) -> Option<String> {
    client_id_of_cmd(client_list, "rlock.acquire")
}

/// The id of the first client that `CLIENT LIST` (its reply,
/// `client_list`) shows running, or last having run, `cmd` (in lower case,
/// as the list writes it).
pub fn client_id_of_cmd(client_list: &str, cmd: &str) -> Option<String> {
    let field = format!(" cmd={cmd} ");
    client_list
        .lines()
        .find(|line| line.contains(&field))
        .and_then(|line| line.split(' ').find_map(|field| field.strip_prefix("id=")))
        .map(str::to_string)
}

/// An acquire's `REPLY FULL` fields, checked by name: granted, holds,
/// lease_ms, waited_ms.
pub fn full_reply(reply: redis::Value) -> (i64, i64, i64, i64) {
    let fields = reply_fields(reply, &["granted", "holds", "lease_ms", "waited_ms"]);
    (fields[0], fields[1], fields[2], fields[3])
}

/// A fenced acquire's full reply: the four fields above, and the token.
pub fn full_reply_with_token(reply: redis::Value) -> ((i64, i64, i64, i64), i64) {
    let fields = reply_fields(reply, &["granted", "holds", "lease_ms", "waited_ms", "token"]);
    ((fields[0], fields[1], fields[2], fields[3]), fields[4])
}

/// The values of a flat `name value …` reply whose names are `names`.
fn reply_fields(reply: redis::Value, names: &[&str]) -> Vec<i64> {
    let redis::Value::Array(items) = reply else { panic!("not a full reply: {reply:?}") };
    let fields: Vec<(String, i64)> = items
        .chunks(2)
        .map(|pair| {
            (redis::from_redis_value(pair[0].clone()).unwrap(), redis::from_redis_value(pair[1].clone()).unwrap())
        })
        .collect();
    let got: Vec<&str> = fields.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(got, names);
    fields.into_iter().map(|(_, value)| value).collect()
}
