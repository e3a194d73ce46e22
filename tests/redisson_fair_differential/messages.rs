//! The messages of a step: keyspace events on the lock hash alike, every
//! script message published natively too; the native side's others tell
//! a waiter its turn.

use super::{Names, OWNERS};

/// Keyspace events on the lock hash alike; every script message published
/// natively too; the native side's others tell a waiter its turn.
pub fn check_messages(context: &str, messages: Vec<(String, String)>, names: Names) {
    let Names { lua: lua_twin, native: native_twin } = names;
    let (mut lua_events, mut native_events, mut lua_messages, mut native_messages) = (vec![], vec![], vec![], vec![]);
    for (channel, message) in messages {
        // A lease running out is announced when the server expires the key.
        if message == "expired" || channel.ends_with(":expired") {
            continue;
        }
        let native = channel.contains(native_twin) || message.contains(native_twin);
        let (channel, message) = (channel.replace(native_twin, lua_twin), message.replace(native_twin, lua_twin));
        let on_hash = channel == format!("__keyspace@0__:{lua_twin}") || message == lua_twin;
        match (channel.starts_with("__key"), native) {
            (true, false) if on_hash => lua_events.push((channel, message)),
            (true, true) if on_hash => native_events.push((channel, message)),
            (true, _) => {}
            (false, false) => lua_messages.push((channel, message)),
            (false, true) => native_messages.push((channel, message)),
        }
    }
    assert_eq!(lua_events, native_events, "{context}: keyspace events on the lock");
    let waiters = waiter_channels(lua_twin);
    for message in &lua_messages {
        assert!(native_messages.contains(message), "{context}: {message:?} not published natively");
    }
    for (channel, message) in &native_messages {
        assert!(message == "0" && waiters.contains(channel), "{context}: native message {message} on {channel}");
    }
}

/// The channels of the owners waiting on `name`: where the native side
/// may tell a head its turn came when the script does not.
fn waiter_channels(name: &str) -> Vec<String> {
    OWNERS
        .iter()
        .map(|owner| String::from_utf8(rlock_protocol::fair_waiter_channel(name.as_bytes(), owner.as_bytes())).unwrap())
        .collect()
}
