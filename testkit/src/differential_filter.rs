//! Differentials of the filter (the module's rewrite of Redisson's script
//! calls) on twin lock names of one server: each step runs a script call
//! as Lua on one name and natively on its twin, in one MULTI/EXEC, so that
//! no other command comes between them; their keys are then read in one
//! script ([`snapshot`]), for the same reason. The two calls do not meet
//! quite the same clock: Redis 7.0 expires keys at the time EXEC began for
//! the native command, but at its own start for the script, a moment
//! later. A key expiring in that moment would be gone for the Lua twin
//! only, so a step first waits ([`quiet_now`]) until no twin key is about
//! to expire.

use crate::differential_snapshot::{same_snapshots, snapshot, KeyState};
use crate::twins::{expiry_ends, quiet_now};
use crate::{publications, Server};
use redis::{Cmd, Connection, ConnectionLike, Value};

/// A differential's two lock names on one server: scripts run as Lua on
/// `lua` (the filter off), and natively on `native` (the filter on).
pub struct FilterTwins {
    pub lua: &'static str,
    pub native: &'static str,
}

/// A reply, or the error's text.
pub type Reply = Result<Value, String>;

/// One step on both twins: its replies and the keyspace events and
/// messages of each twin, the native twin's renamed to the Lua twin's.
/// Expiries are left out: a lease running out is announced when the
/// server expires the key (lazily or by its sampling), not by the step
/// that set it.
pub struct FilterStep {
    pub lua: Reply,
    pub native: Reply,
    pub lua_messages: Vec<(String, String)>,
    pub native_messages: Vec<(String, String)>,
}

/// A step waits while a key expires within this many ms: longer than a
/// step takes (a few round trips) on a loaded machine.
const EXPIRY_GUARD_MS: i64 = 20;

/// How far apart the twins' PTTLs may be, read a moment apart.
const TOLERANCE_MS: i64 = 50;

/// Sets the filter's mode (`rlock.redisson-scripts`: off, native, ...).
pub fn set_filter_mode(con: &mut Connection, mode: &str) {
    let _: () = redis::cmd("CONFIG").arg(&["SET", "rlock.redisson-scripts", mode]).query(con).unwrap();
}

impl FilterTwins {
    /// Runs `call(name)` on both twins in one MULTI/EXEC: the filter
    /// rewrites a call as it is queued, so `control` (another connection)
    /// turns it off for the Lua twin's call and on for the native twin's.
    /// `keys(name)` lists each twin's keys, whose expiries it waits out.
    pub fn step(
        &self,
        server: &Server,
        control: &mut Connection,
        keys: impl Fn(&str) -> Vec<Vec<u8>>,
        call: impl Fn(&str) -> Cmd,
    ) -> FilterStep {
        let all = [keys(self.lua), keys(self.native)].concat();
        quiet_now(control, EXPIRY_GUARD_MS, |con| expiry_ends(con, &all));
        let mut replies = Value::Nil;
        let messages = publications(server, |con| {
            let _: () = redis::cmd("MULTI").query(con).unwrap();
            set_filter_mode(control, "off");
            let _: () = call(self.lua).query(con).unwrap();
            set_filter_mode(control, "native");
            let _: () = call(self.native).query(con).unwrap();
            replies = con.req_command(&redis::cmd("EXEC")).unwrap();
        });
        let Value::Array(replies) = replies else { panic!("EXEC replied {replies:?}") };
        let [lua, native] = <[Value; 2]>::try_from(replies).expect("two replies").map(|reply| match reply {
            Value::ServerError(err) => Err(err.to_string()),
            value => Ok(value),
        });
        let stepped =
            messages.into_iter().filter(|(channel, message)| message != "expired" && !channel.ends_with(":expired"));
        let (lua_messages, native_messages): (Vec<_>, Vec<_>) =
            stepped.partition(|(channel, message)| !channel.contains(self.native) && !message.contains(self.native));
        let native_messages = native_messages
            .into_iter()
            .map(|(channel, message)| (self.as_lua(&channel), self.as_lua(&message)))
            .collect();
        FilterStep { lua, native, lua_messages, native_messages }
    }

    /// Runs one call on both twins (see `step`) and asserts that their
    /// replies, keyspace events, messages and keys (`keys` of each name)
    /// are the same. True when both calls failed.
    pub fn check(
        &self,
        server: &Server,
        [con, control]: [&mut Connection; 2],
        context: &str,
        pttl: bool,
        call: impl Fn(&str) -> Cmd,
        keys: impl Fn(&str) -> Vec<Vec<u8>>,
    ) -> bool {
        let step = self.step(server, control, &keys, call);
        let failed = assert_same_reply(context, &step.lua, &step.native, pttl);
        assert_eq!(step.lua_messages, step.native_messages, "{context}: keyspace events and messages");
        self.assert_same_keys(con, context, keys);
        failed
    }

    /// A step of a filter differential whose calls are `call(name)`: a
    /// `pause` lets the twins' short expiries run out (up to 150 ms); a
    /// call this release has no script for (`call` gives `None`) runs
    /// `prepare` on both twins instead, in one MULTI (its replies are
    /// `QUEUED`); else both calls are compared as
    /// [`FilterTwins::check`] does. `Some(both failed)` when it called.
    #[allow(clippy::too_many_arguments)]
    pub fn step_or_prepare(
        &self,
        server: &Server,
        [con, control]: [&mut Connection; 2],
        context: &str,
        pause: bool,
        call: impl Fn(&str) -> Option<Cmd>,
        mut prepare: impl FnMut(&mut Connection, &str),
        keys: impl Fn(&str) -> Vec<Vec<u8>>,
    ) -> Option<bool> {
        if pause {
            crate::run_out(con, &[keys(self.lua), keys(self.native)].concat(), 150);
            return None;
        }
        if call(self.lua).is_none() {
            // At one moment: an expiry set on one twin a moment after the
            // other's would end that much later (60 ms on a loaded machine).
            let _: () = redis::cmd("MULTI").query(con).unwrap();
            for name in [self.lua, self.native] {
                prepare(con, name);
            }
            con.req_command(&redis::cmd("EXEC")).unwrap(); // a DECR of a hash fails in it, as it did alone
            return None;
        }
        let call = |name: &str| call(name).expect("a call");
        Some(self.check(server, [con, control], context, false, call, keys))
    }

    /// Asserts that the twins' keys (`keys` of each name) are the same.
    pub fn assert_same_keys(&self, con: &mut Connection, context: &str, keys: impl Fn(&str) -> Vec<Vec<u8>>) {
        let [lua, native] = self.states(con, keys);
        assert!(same_snapshots(&lua, &native, TOLERANCE_MS), "{context}: keys\n{lua:?}\n{native:?}");
    }

    fn as_lua(&self, text: &str) -> String {
        text.replace(self.native, self.lua)
    }

    /// Each twin's [`snapshot`] (`keys(name)` lists its keys), read at one
    /// moment, named as on the Lua twin.
    pub fn states(&self, con: &mut Connection, keys: impl Fn(&str) -> Vec<Vec<u8>>) -> [Vec<KeyState>; 2] {
        let (lua, native) = (keys(self.lua), keys(self.native));
        let mut states = snapshot(con, &[&lua[..], &native[..]].concat()).into_iter();
        let lua: Vec<KeyState> = states.by_ref().take(lua.len()).collect();
        [lua, states.map(|(key, pttl)| (self.as_lua(&key), pttl)).collect()]
    }
}

/// Asserts the twins' replies are the same (`pttl`: a positive integer,
/// alone or first in an array, is a PTTL, read a moment apart); true when
/// both are errors (their texts differ, see README).
pub fn assert_same_reply(context: &str, lua: &Reply, native: &Reply, pttl: bool) -> bool {
    fn split(reply: &Reply, pttl: bool) -> Option<(i64, &[Value])> {
        match reply {
            Ok(Value::Int(ttl)) if pttl && *ttl > 0 => Some((*ttl, &[])),
            Ok(Value::Array(items)) if pttl => match items.as_slice() {
                [Value::Int(ttl), rest @ ..] if *ttl > 0 => Some((*ttl, rest)),
                _ => None,
            },
            _ => None,
        }
    }
    match (lua, native, split(lua, pttl), split(native, pttl)) {
        (Err(_), Err(_), ..) => return true,
        (.., Some((a, rest_a)), Some((b, rest_b))) => {
            assert!((a - b).abs() <= TOLERANCE_MS && rest_a == rest_b, "{context}: {lua:?} against {native:?}")
        }
        _ => assert_eq!(lua, native, "{context}: replies"),
    }
    false
}
