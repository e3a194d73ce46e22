//! Redisson 4.x's count-down latch scripts as Lua (ours, transcribed from
//! Redisson's; layout in docs/commands.md), with Redisson's exact
//! KEYS and ARGV: the reference the RLATCH commands are checked against.

use super::{evalsha, load_all, text, Caller};
use redis::{Cmd, ConnectionLike, RedisResult, Script};
use rlock_protocol::count_down_latch_channel;

/// Redisson's latch messages: `0` opens, `1` says a new count was set.
const ZERO_COUNT_MESSAGE: &[u8] = b"0";
const NEW_COUNT_MESSAGE: &[u8] = b"1";

pub struct LatchScripts {
    try_set_count: Script,
    count_down: Script,
    delete: Script,
    caller: Caller,
}

impl Default for LatchScripts {
    fn default() -> Self {
        Self {
            try_set_count: Script::new(include_str!("../../scripts/countdown/try_set_count.lua")),
            count_down: Script::new(include_str!("../../scripts/countdown/count_down.lua")),
            delete: Script::new(include_str!("../../scripts/countdown/delete.lua")),
            caller: Caller::default(),
        }
    }
}

impl LatchScripts {
    /// The same scripts called as `caller` calls them (publish command).
    pub fn with_caller(caller: Caller) -> Self {
        Self { caller, ..Self::default() }
    }

    /// SCRIPT LOAD all of them (each method's command is an EVALSHA).
    pub fn load(&self, con: &mut dyn ConnectionLike) -> RedisResult<()> {
        load_all(con, &[&self.try_set_count, &self.count_down, &self.delete])
    }

    /// trySetCount(count): KEYS `[name, channel]`, ARGV `[1, count, publish]`; 1 or 0.
    pub fn try_set_count(&self, name: &[u8], count: i64) -> Cmd {
        let args: [&[u8]; 3] = [NEW_COUNT_MESSAGE, &text(count), self.caller.publish.as_bytes()];
        evalsha(&self.try_set_count, &[name, &count_down_latch_channel(name)], &args)
    }

    /// countDown: KEYS `[name, channel]`, ARGV `[0, publish]`; nil.
    pub fn count_down(&self, name: &[u8]) -> Cmd {
        let args: [&[u8]; 2] = [ZERO_COUNT_MESSAGE, self.caller.publish.as_bytes()];
        evalsha(&self.count_down, &[name, &count_down_latch_channel(name)], &args)
    }

    /// delete: KEYS `[name, channel]`, ARGV `[1, publish]`; 1 or 0.
    pub fn delete(&self, name: &[u8]) -> Cmd {
        let args: [&[u8]; 2] = [NEW_COUNT_MESSAGE, self.caller.publish.as_bytes()];
        evalsha(&self.delete, &[name, &count_down_latch_channel(name)], &args)
    }
}
