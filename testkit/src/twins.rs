//! Support for differential tests that run each step twice in one MULTI:
//! on `s:<name>` through Redisson's scripts and on `c:<name>` through the
//! module's commands, then compare what each twin holds and published.

use crate::Server;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

const STEP: &str = "testkit:twins:step";
const DONE: &str = "testkit:twins:done";

/// The script twin's name (`s:` + name) or the command twin's (`c:`).
pub fn twin(side: Side, name: &[u8]) -> Vec<u8> {
    [side.prefix(), name].concat()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Scripts,
    Commands,
}

impl Side {
    fn prefix(self) -> &'static [u8] {
        match self {
            Self::Scripts => b"s:",
            Self::Commands => b"c:",
        }
    }
}

/// One message published during a step: the step, the channel (with the
/// twin's prefix taken out of the name), the payload.
pub type StepMessage = (usize, String, String);

/// Collects the messages every step publishes on channels matching the
/// patterns, from a listener subscribed before the first step.
pub struct StepMessages {
    names: Vec<Vec<u8>>,
    listener: JoinHandle<Vec<(String, String)>>,
}

impl StepMessages {
    /// Subscribes to `patterns`; `names` are the untwinned names in use.
    pub fn subscribe(server: &Server, patterns: &[&str], names: &[&[u8]]) -> Self {
        let mut con = server.connection();
        let patterns: Vec<String> = patterns.iter().map(|p| p.to_string()).collect();
        let (ready, subscribed) = mpsc::channel();
        let listener = std::thread::spawn(move || {
            let mut pubsub = con.as_pubsub();
            pubsub.psubscribe(&patterns).expect("PSUBSCRIBE");
            pubsub.subscribe(&[STEP, DONE]).expect("SUBSCRIBE");
            pubsub.set_read_timeout(Some(Duration::from_secs(30))).expect("read timeout");
            ready.send(()).expect("the test waits");
            let mut messages = Vec::new();
            loop {
                // A failing test stops its server: this then panics too, after it.
                let message = pubsub.get_message().expect("the steps' messages (the server stopped?)");
                let channel = message.get_channel_name().to_owned();
                if channel == DONE {
                    return messages;
                }
                messages.push((channel, message.get_payload::<String>().expect("a text payload")));
            }
        });
        subscribed.recv().expect("the listener subscribed");
        Self { names: names.iter().map(|name| name.to_vec()).collect(), listener }
    }

    /// Adds the end-of-step marker to a step's MULTI, after its commands.
    pub fn mark(pipe: &mut redis::Pipeline, step: usize) {
        pipe.cmd("PUBLISH").arg(STEP).arg(step);
    }

    /// The script twin's messages and the command twin's, each in order,
    /// once `con` says the steps are over.
    pub fn finish(self, con: &mut redis::Connection) -> [Vec<StepMessage>; 2] {
        let _: () = redis::cmd("PUBLISH").arg(DONE).arg("").query(con).expect("PUBLISH");
        let Self { names, listener } = self;
        let raw = listener.join().expect("the listener");
        let (mut sides, mut pending) = ([Vec::new(), Vec::new()], Vec::new());
        for (channel, payload) in raw {
            if channel == STEP {
                let step: usize = payload.parse().expect("a step number");
                for (side, channel, payload) in pending.drain(..) {
                    sides[usize::from(side == Side::Commands)].push((step, channel, payload));
                }
            } else {
                let (side, channel) = untwin(&names, &channel);
                pending.push((side, channel, payload));
            }
        }
        assert!(pending.is_empty(), "messages after the last step: {pending:?}");
        sides
    }
}

/// Which twin published on `channel`, and the channel with the twin's
/// prefix taken out of the name.
fn untwin(names: &[Vec<u8>], channel: &str) -> (Side, String) {
    for side in [Side::Scripts, Side::Commands] {
        for name in names {
            let twin = String::from_utf8_lossy(&twin(side, name)).into_owned();
            if let Some(at) = channel.find(&twin) {
                return (side, format!("{}{}", &channel[..at], &channel[at + 2..]));
            }
        }
    }
    panic!("a message on {channel}, of no twin")
}

/// The wait before a step, the one of every differential: until no
/// expiry among `expire_at_ms` (absolute, from PEXPIRETIME or a deadline
/// the server keeps; negative ones are ignored) is within `guard_ms` of
/// the server's clock, so that no key expires between a step's two twins;
/// returns the server's clock then. It waits for the end the server
/// shows, then reads the ends again.
pub fn quiet_now(
    con: &mut redis::Connection,
    guard_ms: i64,
    mut expire_at_ms: impl FnMut(&mut redis::Connection) -> Vec<i64>,
) -> i64 {
    loop {
        let ends = expire_at_ms(con);
        let now = crate::server_time_ms(con);
        match ends.iter().filter(|end| **end > 0 && (**end - now).abs() <= guard_ms).max() {
            None => return now,
            Some(end) => std::thread::sleep(Duration::from_millis((end + guard_ms + 1 - now).max(1) as u64)),
        }
    }
}

/// Whether an expiry among `ends` (as [`quiet_now`] takes them) fell
/// within a step, after the clock `now` it began with and by its end
/// `end_ms` (both the server's). [`quiet_now`] keeps every expiry clear
/// of `now`, but a machine that stalls the test after it longer than the
/// guard lets one pass before the step runs: a twin given `now` and one
/// reading the server's clock (or two calls apart) then run on either
/// side of it, and no longer compare. Such a step starts its sequence
/// over, its twins uncompared.
pub fn expired_within(ends: &[i64], now: i64, end_ms: i64) -> bool {
    ends.iter().any(|end| *end > now && *end <= end_ms)
}

/// How far apart the twins' clock-derived values (PTTLs, expiries) may be.
/// Each twin reads the server's clock when it runs, so a step's two values
/// differ by up to the time the server spent between them, and an expiry
/// written in an earlier step keeps that step's gap. The server measures
/// both with TIME at the ends of each step's MULTI: a loaded machine that
/// deschedules the server mid-step widens the bound by what it cost,
/// instead of failing a fixed guess. On Redis 7.2+ and Valkey, Redis's own
/// commands and scripts in a MULTI read the clock EXEC froze when it
/// began, before the first TIME; so the bound is at least the step's whole
/// round trip, as the test's process measures it (a stall between EXEC's
/// start and that TIME, seen once on Valkey in CI, is inside it).
pub struct Drift {
    base_ms: i64,
    slowest_ms: i64,
}

impl Drift {
    /// `base_ms` covers rounding to whole milliseconds.
    pub fn new(base_ms: i64) -> Self {
        Self { base_ms, slowest_ms: 0 }
    }

    /// A new sequence: empties the keyspace ([`flush_all`]); no earlier
    /// step's gap remains.
    pub fn new_sequence(&mut self, con: &mut redis::Connection) {
        flush_all(con);
        self.slowest_ms = 0;
    }

    /// The guard before a step ([`quiet_now`]): `base_ms`, more the slowest
    /// step of the sequence, which a step racing an expiry could take again.
    pub fn guard_ms(&self, base_ms: i64) -> i64 {
        base_ms + self.slowest_ms
    }

    /// Starts a step's MULTI with a TIME; `query` ends it with another.
    pub fn begin(pipe: &mut redis::Pipeline) {
        pipe.atomic().cmd("TIME");
    }

    /// Runs the step; its replies without the two TIMEs, and the tolerance
    /// for values compared after it.
    pub fn query(
        &mut self,
        mut pipe: redis::Pipeline,
        con: &mut redis::Connection,
    ) -> redis::RedisResult<(Vec<redis::Value>, i64)> {
        let sent = std::time::Instant::now();
        let mut replies: Vec<redis::Value> = pipe.cmd("TIME").query(con)?;
        let round_trip_ms = sent.elapsed().as_micros().div_ceil(1000) as i64;
        let ended = replies.pop().expect("the closing TIME");
        let began = replies.remove(0);
        let micros = |time: &redis::Value| -> i64 {
            let (seconds, micros): (i64, i64) = redis::from_redis_value(time.clone()).expect("a TIME reply");
            seconds * 1_000_000 + micros
        };
        let took_ms = ((micros(&ended) - micros(&began) + 999) / 1000).max(round_trip_ms);
        self.slowest_ms = self.slowest_ms.max(took_ms);
        Ok((replies, self.base_ms + took_ms + self.slowest_ms))
    }
}

/// Empties the keyspace: a differential's new sequence, or one started
/// over.
pub fn flush_all(con: &mut redis::Connection) {
    let _: () = redis::cmd("FLUSHALL").query(con).expect("FLUSHALL");
}

/// The absolute expiry (PEXPIRETIME) of each of `keys`: -1 without one,
/// -2 when gone.
pub fn expiry_ends(con: &mut redis::Connection, keys: &[Vec<u8>]) -> Vec<i64> {
    let mut pipe = redis::pipe();
    for key in keys {
        pipe.cmd("PEXPIRETIME").arg(key);
    }
    pipe.query(con).expect("PEXPIRETIME")
}

/// Lets the short expiries run out: waits until the server's clock is past
/// every expiry among `keys` due within `within_ms` (the step "time
/// passes" of the differentials, bounded by what the server holds).
pub fn run_out(con: &mut redis::Connection, keys: &[Vec<u8>], within_ms: i64) {
    let now = crate::server_time_ms(con);
    let due = expiry_ends(con, keys).into_iter().filter(|end| *end >= 0 && *end - now <= within_ms).max();
    if let Some(last) = due {
        crate::eventually("the short expiries ran out", crate::PATIENCE, || crate::server_time_ms(con) > last);
    }
}
