//! The server side of the model test: the lock's name and owners, the
//! snapshot, the listener on the waiters' channels and the threads that
//! make blocking calls.

use crate::model::{Kind, Snapshot, Uid};
use redis::{Cmd, Connection, Value};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};
use testkit::Server;

pub const NAME: &[u8] = b"{fm}lock";

/// Something that reached the driver from another thread.
#[derive(Debug)]
pub enum Event {
    /// A message on a waiter's channel.
    Message { uid: Uid, at: Instant },
    /// The reply of a blocking call.
    Reply { uid: Uid, reply: Result<Value, String>, at: Instant },
}

pub fn owner(kind: Kind, uid: Uid) -> String {
    let letter = match kind {
        Kind::Poll => 'p',
        Kind::Script => 's',
        Kind::Block => 'b',
    };
    format!("{letter}{uid}")
}

pub fn uid_of(owner: &[u8]) -> Result<Uid, String> {
    std::str::from_utf8(owner)
        .ok()
        .and_then(|text| text.get(1..))
        .and_then(|digits| digits.parse().ok())
        .ok_or_else(|| format!("an owner that is none of the test's: {}", String::from_utf8_lossy(owner)))
}

/// `base` moved by `ms` (either way).
pub fn shifted(base: Instant, ms: i64) -> Instant {
    let by = Duration::from_millis(ms.unsigned_abs());
    if ms >= 0 {
        base + by
    } else {
        base.checked_sub(by).unwrap_or(base)
    }
}

pub fn snapshot(con: &mut Connection) -> Result<Snapshot, String> {
    let before = Instant::now();
    type Read = (Vec<(Vec<u8>, i64)>, i64, Vec<Vec<u8>>, Vec<(Vec<u8>, i64)>, (i64, i64));
    let (hash, pttl, queue, scores, (seconds, micros)): Read = redis::pipe()
        .atomic()
        .cmd("HGETALL")
        .arg(NAME)
        .cmd("PTTL")
        .arg(NAME)
        .cmd("LRANGE")
        .arg(rlock_protocol::fair_queue_key(NAME))
        .arg(0)
        .arg(-1)
        .cmd("ZRANGE")
        .arg(rlock_protocol::fair_timeout_key(NAME))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .cmd("TIME")
        .query(con)
        .map_err(|e| format!("snapshot: {e}"))?;
    let after = Instant::now();
    let now_ms = seconds * 1000 + micros / 1000;
    let mut holders = Vec::new();
    for (owner, count) in hash {
        holders.push((uid_of(&owner)?, count));
    }
    let queue = queue.iter().map(|owner| uid_of(owner)).collect::<Result<_, _>>()?;
    let mut deadlines = Vec::new();
    for (owner, score) in scores {
        deadlines.push((uid_of(&owner)?, shifted(before, score - now_ms)));
    }
    Ok(Snapshot { taken: (before, after), holders, pttl, queue, deadlines })
}

/// Listens on every waiter channel of the lock (subscribed on return).
pub fn listen(server: &Server, events: Sender<Event>) {
    let mut con = server.connection();
    let (ready, subscribed) = mpsc::channel();
    let prefix = rlock_protocol::fair_waiter_channel(NAME, b"");
    std::thread::spawn(move || {
        let mut pubsub = con.as_pubsub();
        let pattern = [prefix.as_slice(), b"*"].concat();
        pubsub.psubscribe(pattern).expect("PSUBSCRIBE");
        ready.send(()).unwrap();
        while let Ok(message) = pubsub.get_message() {
            let at = Instant::now();
            let channel: Vec<u8> = message.get_channel().unwrap();
            let Ok(uid) = uid_of(&channel[prefix.len()..]) else { continue };
            if events.send(Event::Message { uid, at }).is_err() {
                return;
            }
        }
    });
    subscribed.recv_timeout(Duration::from_secs(10)).expect("the listener subscribed");
}

/// A connection in a thread of its own, for blocking calls.
pub struct Blocker {
    calls: Sender<Cmd>,
    pub client_id: i64,
}

impl Blocker {
    pub fn new(server: &Server, uid: Uid, events: Sender<Event>) -> Self {
        let mut con = server.connection();
        let client_id: i64 = redis::cmd("CLIENT").arg("ID").query(&mut con).expect("CLIENT ID");
        let (calls, incoming) = mpsc::channel::<Cmd>();
        std::thread::spawn(move || {
            for call in incoming {
                let reply = call.query::<Value>(&mut con).map_err(|e| e.to_string());
                if events.send(Event::Reply { uid, reply, at: Instant::now() }).is_err() {
                    return;
                }
            }
        });
        Self { calls, client_id }
    }

    pub fn send(&self, call: Cmd) {
        self.calls.send(call).expect("the blocker thread runs");
    }
}

/// Whether `CLIENT LIST` shows the client blocked.
pub fn is_blocked(con: &mut Connection, client_id: i64) -> Result<bool, String> {
    let list: String = redis::cmd("CLIENT")
        .arg("LIST")
        .arg("ID")
        .arg(client_id)
        .query(con)
        .map_err(|e| format!("CLIENT LIST: {e}"))?;
    Ok(list.split(' ').any(|field| field.strip_prefix("flags=").is_some_and(|flags| flags.contains('b'))))
}

/// Waits for the next event until `until`, keeping the ones that came.
pub fn wait_events(events: &Receiver<Event>, backlog: &mut std::collections::VecDeque<Event>, until: Instant) {
    let left = until.saturating_duration_since(Instant::now());
    if let Ok(event) = events.recv_timeout(left) {
        backlog.push_back(event);
    }
    backlog.extend(events.try_iter());
}

/// Whether the server knows `RFAIR.ACQUIRE … BLOCK`: on a free lock of its
/// own it takes it at once. The error text when it does not.
pub fn block_supported(con: &mut Connection) -> Result<(), String> {
    let probe: redis::RedisResult<Value> = redis::cmd("RFAIR.ACQUIRE")
        .arg("{fm}probe")
        .arg("probe")
        .arg(1000)
        .arg("WAIT")
        .arg(100)
        .arg("BLOCK")
        .arg(10)
        .query(con);
    let _: () = redis::cmd("DEL").arg("{fm}probe").query(con).unwrap();
    match probe {
        Ok(Value::Nil) => Ok(()),
        other => Err(format!("{other:?}")),
    }
}
