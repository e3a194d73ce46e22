//! A twin's keys, and what it holds, as the steps compare them.

use super::{Names, REQUESTS};
use redis::{Commands, Connection};
use std::collections::BTreeSet;
use testkit::unlock_latch_key;

/// The keys and the channel of the lock `name`.
pub struct Keys {
    pub name: Vec<u8>,
    pub queue: Vec<u8>,
    pub deadlines: Vec<u8>,
    pub channel: Vec<u8>,
}

impl Keys {
    pub fn of(name: &str) -> Self {
        let name = name.as_bytes();
        Self {
            name: name.to_vec(),
            queue: rlock_protocol::fair_queue_key(name),
            deadlines: rlock_protocol::fair_timeout_key(name),
            channel: rlock_protocol::release_channel(name),
        }
    }
}

/// What a twin holds, its name replaced by the Lua twin's: the lock hash,
/// the queue, the owners with a deadline, the latches (type, value), each
/// with its PTTL where it has one, then each deadline less `now`; and
/// whether every deadline is still ahead of `now`.
pub fn state(con: &mut Connection, name: &str, now: i64, names: Names) -> (Vec<(String, i64)>, bool) {
    let keys = Keys::of(name);
    let mut described = vec![];
    let mut fields: Vec<(String, String)> = con.hgetall(&keys.name).unwrap();
    fields.sort();
    described.push((format!("hash {fields:?}"), con.pttl(&keys.name).unwrap()));
    let queue: Vec<String> = con.lrange(&keys.queue, 0, -1).unwrap();
    described.push((format!("queue {queue:?}"), con.pttl(&keys.queue).unwrap()));
    let deadlines: Vec<(String, i64)> = con.zrange_withscores(&keys.deadlines, 0, -1).unwrap();
    let waiting: BTreeSet<&String> = deadlines.iter().map(|(owner, _)| owner).collect();
    described.push((format!("deadlines of {waiting:?}"), con.pttl(&keys.deadlines).unwrap()));
    for request in REQUESTS {
        let latch = unlock_latch_key(name.as_bytes(), request.as_bytes());
        let value: Option<String> = con.get(&latch).unwrap();
        described.push((format!("latch {request} {value:?}"), con.pttl(&latch).unwrap()));
    }
    let ahead = deadlines.iter().all(|(_, deadline)| *deadline > now);
    described.extend(deadlines.into_iter().map(|(owner, deadline)| (format!("deadline of {owner}"), deadline - now)));
    (described.into_iter().map(|(what, pttl)| (what.replace(names.native, names.lua), pttl)).collect(), ahead)
}
