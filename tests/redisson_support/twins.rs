//! Differentials on twin lock names: each step runs a script call as Lua
//! on one name and natively on its twin, in one MULTI/EXEC, so that no
//! other command comes between them; their keys are then read in one
//! script, for the same reason. The two calls do not meet quite the same
//! clock: Redis 7.0 expires keys at the time EXEC began for the native
//! command, but at its own start for the script, a moment later. A key
//! expiring in that moment would be gone for the Lua twin only (a rare
//! failure of the rwlock differential), so a step first waits until no
//! twin key is about to expire.

use super::set_mode;
use redis::{Cmd, Connection, ConnectionLike, Value};
use std::time::Duration;
use testkit::{publications, Server};

/// A differential's two lock names on one server: scripts run as Lua on
/// `lua` (the filter off), and natively on `native` (the filter on).
pub struct Twins {
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
pub struct Step {
    pub lua: Reply,
    pub native: Reply,
    pub lua_messages: Vec<(String, String)>,
    pub native_messages: Vec<(String, String)>,
}

/// The least PTTL of the keys that expire, or -1.
const SOONEST_EXPIRY: &str = "local soonest = -1 \
    for _, key in ipairs(KEYS) do \
        local ttl = redis.call('pttl', key) \
        if ttl >= 0 and (soonest < 0 or ttl < soonest) then soonest = ttl end \
    end return soonest";

/// A step waits while a key expires within this many ms: longer than a
/// step takes (a few round trips) on a loaded machine.
const EXPIRY_GUARD_MS: i64 = 20;

/// Reads type, value and PTTL of each key at one moment: the PTTLs from
/// the absolute expiries and one clock reading (Redis 7.0's PTTL reads the
/// clock anew, so a server descheduled mid-script would skew the twins).
const READ_KEYS: &str = "local out = {} \
    local time = redis.call('time'); local now = time[1] * 1000 + math.floor(time[2] / 1000) \
    for i, key in ipairs(KEYS) do \
        local kind = redis.call('type', key).ok; local value = {} \
        if kind == 'hash' then value = redis.call('hgetall', key) \
        elseif kind == 'string' then value = {redis.call('get', key)} \
        elseif kind == 'zset' then value = redis.call('zrange', key, 0, -1, 'withscores') end \
        local at = redis.call('pexpiretime', key); if at >= 0 then at = math.max(at - now, 0) end \
        out[i] = {kind, value, at} \
    end return out";

impl Twins {
    /// Runs `call(name)` on both twins in one MULTI/EXEC: the filter
    /// rewrites a call as it is queued, so `control` (another connection)
    /// turns it off for the Lua twin's call and on for the native twin's.
    /// `keys(name)` lists each twin's keys (see [`Twins::clear_of_expiries`]).
    pub fn step(
        &self,
        server: &Server,
        control: &mut Connection,
        keys: impl Fn(&str) -> Vec<Vec<u8>>,
        call: impl Fn(&str) -> Cmd,
    ) -> Step {
        self.clear_of_expiries(control, keys);
        let mut replies = Value::Nil;
        let messages = publications(server, |con| {
            let _: () = redis::cmd("MULTI").query(con).unwrap();
            set_mode(control, "off");
            let _: () = call(self.lua).query(con).unwrap();
            set_mode(control, "native");
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
        Step { lua, native, lua_messages, native_messages }
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
        let states = self.states(con, keys);
        assert!(same_states(&states), "{context}: keys\n{:?}\n{:?}", states[0], states[1]);
        failed
    }

    /// Waits until no key of either twin expires within [`EXPIRY_GUARD_MS`]:
    /// the two calls of a step read the clock at slightly different times
    /// (see this file's header), so a key expiring during a step
    /// may be gone for one call and there for the other. The wait is for
    /// the key's own expiry, read again after it.
    fn clear_of_expiries(&self, con: &mut Connection, keys: impl Fn(&str) -> Vec<Vec<u8>>) {
        let all = [keys(self.lua), keys(self.native)].concat();
        loop {
            let soonest: i64 = redis::cmd("EVAL").arg(SOONEST_EXPIRY).arg(all.len()).arg(&all).query(con).unwrap();
            if !(0..=EXPIRY_GUARD_MS).contains(&soonest) {
                return;
            }
            std::thread::sleep(Duration::from_millis(soonest as u64 + 1));
        }
    }

    fn as_lua(&self, text: &str) -> String {
        text.replace(self.native, self.lua)
    }

    /// Type, value and PTTL of each key (`keys(name)` lists them), named
    /// as on the Lua twin.
    pub fn states(&self, con: &mut Connection, keys: impl Fn(&str) -> Vec<Vec<u8>>) -> [Vec<(String, i64)>; 2] {
        let (lua, native) = (keys(self.lua), keys(self.native));
        let all: Vec<&Vec<u8>> = lua.iter().chain(&native).collect();
        let read: Vec<(String, Vec<Vec<u8>>, i64)> =
            redis::cmd("EVAL").arg(READ_KEYS).arg(all.len()).arg(&all).query(con).unwrap();
        let mut states = all.iter().zip(read).map(|(key, (kind, value, pttl))| {
            let value: Vec<String> = value.iter().map(|part| String::from_utf8_lossy(part).into_owned()).collect();
            let value = match kind.as_str() {
                "hash" => {
                    let mut fields: Vec<(&String, &String)> =
                        value.chunks(2).map(|pair| (&pair[0], &pair[1])).collect();
                    fields.sort();
                    format!("{fields:?}")
                }
                "zset" => format!("{value:?}"),
                _ => value.concat(),
            };
            (format!("{} {kind} {value}", self.as_lua(&String::from_utf8_lossy(key))), pttl)
        });
        [states.by_ref().take(lua.len()).collect(), states.collect()]
    }
}

/// Whether the twins' keys are the same, TTLs give or take the moment
/// between the two calls. A key about to expire counts as gone: the
/// twins' expiries may be a millisecond apart (Lua's relative to the
/// script's clock, the module's absolute from its own), and the keys may
/// be read within that millisecond.
pub fn same_states([lua, native]: &[Vec<(String, i64)>; 2]) -> bool {
    lua.len() == native.len()
        && lua.iter().zip(native).all(|(a, b)| {
            let close = |x: i64, y: i64| x == y || (x >= 0 && y >= 0 && (x - y).abs() <= 50);
            (a.0 == b.0 && close(a.1, b.1)) || expired_early(a, b) || expired_early(b, a)
        })
}

/// Whether `gone` is the key `expiring` about to expire, read as gone.
fn expired_early(gone: &(String, i64), expiring: &(String, i64)) -> bool {
    let key = expiring.0.split(' ').next().unwrap_or_default();
    gone.1 == -2 && gone.0 == format!("{key} none ") && (0..=EXPIRING_MS).contains(&expiring.1)
}

/// A key this close to its expiry may be read as gone on one twin.
const EXPIRING_MS: i64 = 5;

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
            assert!((a - b).abs() <= 50 && rest_a == rest_b, "{context}: {lua:?} against {native:?}")
        }
        _ => assert_eq!(lua, native, "{context}: replies"),
    }
    false
}
