//! The twins' clocks and the server's own moves: the server's time, the
//! lease and deadline ends ahead, waiting out the moments a step could
//! race them, and following the turns the server's timer gives.

use super::{Scores, GUARD_MS};
use redis::Connection;
use std::time::Duration;

pub fn twin(prefix: &[u8], name: &[u8]) -> Vec<u8> {
    [prefix, name].concat()
}

pub fn now_ms(con: &mut Connection) -> i64 {
    let (seconds, micros): (i64, i64) = redis::cmd("TIME").query(con).unwrap();
    seconds * 1000 + micros / 1000
}

/// Ends of both twins' leases and of their waiters' deadlines.
pub fn events(con: &mut Connection, name: &[u8]) -> Vec<i64> {
    let mut ends = Vec::new();
    for side in [b"s:", b"c:"] {
        let twin = twin(side, name);
        let (pttl, scores): (i64, Vec<(Vec<u8>, i64)>) = redis::pipe()
            .cmd("PTTL")
            .arg(&twin)
            .cmd("ZRANGE")
            .arg(rlock_protocol::fair_timeout_key(&twin))
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query(con)
            .unwrap();
        let now = now_ms(con);
        ends.extend(scores.into_iter().map(|(_, score)| score));
        if pttl >= 0 {
            ends.push(now + pttl);
        }
    }
    ends
}

/// Waits until no lease or deadline ends within the guard of now; returns now.
pub fn quiet_now(con: &mut Connection, name: &[u8]) -> i64 {
    loop {
        let ends = events(con, name);
        let now = now_ms(con);
        match ends.iter().filter(|end| (**end - now).abs() <= GUARD_MS).max() {
            None => return now,
            Some(end) => std::thread::sleep(Duration::from_millis((end + GUARD_MS + 1 - now).max(1) as u64)),
        }
    }
}

/// Takes out of the script twin's queue the dead waiters behind a live
/// one. Redisson's deadlines grow along the queue, so its head-only purge
/// reaches every dead waiter; only the commands' "asks again stays alive"
/// rule, copied into the twin, puts a live waiter before a dead one. The
/// commands purge such a waiter on every touch; the scripts would keep it
/// and base the next waiter's deadline on it.
pub fn drop_dead_behind_live(con: &mut Connection, name: &[u8], now: i64) {
    let s = twin(b"s:", name);
    let (queue_key, timeout_key) = (rlock_protocol::fair_queue_key(&s), rlock_protocol::fair_timeout_key(&s));
    let (queue, scores): (Vec<Vec<u8>>, Scores) = redis::pipe()
        .cmd("LRANGE")
        .arg(&queue_key)
        .arg(0)
        .arg(-1)
        .cmd("ZRANGE")
        .arg(&timeout_key)
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(con)
        .unwrap();
    let is_dead = |member: &Vec<u8>| scores.iter().any(|(m, score)| m == member && *score <= now);
    let Some(first_live) = queue.iter().position(|member| !is_dead(member)) else { return };
    for member in queue[first_live..].iter().filter(|member| is_dead(member)) {
        let _: () = redis::pipe()
            .cmd("LREM")
            .arg(&queue_key)
            .arg(0)
            .arg(member)
            .cmd("ZREM")
            .arg(&timeout_key)
            .arg(member)
            .query(con)
            .unwrap();
    }
}

/// Between steps only the commands' server timer changes a queue: when a
/// lock freed without a command (a lease that ran out) or a free lock's
/// head died, it drops that head and starts the next one's turn (its wait
/// from then). The script twin takes the commands twin's queue and
/// deadlines then, to go on in step. Returns whether it had to.
pub fn follow_timer_turns(con: &mut Connection, name: &[u8]) -> bool {
    let read = |con: &mut Connection, twin: &[u8]| -> (Vec<Vec<u8>>, Scores) {
        redis::pipe()
            .cmd("LRANGE")
            .arg(rlock_protocol::fair_queue_key(twin))
            .arg(0)
            .arg(-1)
            .cmd("ZRANGE")
            .arg(rlock_protocol::fair_timeout_key(twin))
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query(con)
            .unwrap()
    };
    let (s, c) = (twin(b"s:", name), twin(b"c:", name));
    let (commands, scripts) = (read(con, &c), read(con, &s));
    if commands == scripts {
        return false;
    }
    let (queue_key, timeout_key) = (rlock_protocol::fair_queue_key(&s), rlock_protocol::fair_timeout_key(&s));
    let mut pipe = redis::pipe();
    pipe.atomic().cmd("DEL").arg(&queue_key).arg(&timeout_key).ignore();
    for member in &commands.0 {
        pipe.cmd("RPUSH").arg(&queue_key).arg(member).ignore();
    }
    for (member, score) in &commands.1 {
        pipe.cmd("ZADD").arg(&timeout_key).arg(score).arg(member).ignore();
    }
    let _: () = pipe.query(con).unwrap();
    true
}

/// Whether the commands twin's lock is free while someone queues: its head
/// may not have been told yet.
pub fn untold_head(con: &mut Connection, name: &[u8]) -> bool {
    let c = twin(b"c:", name);
    let (pttl, queued): (i64, i64) =
        redis::pipe().cmd("PTTL").arg(&c).cmd("LLEN").arg(rlock_protocol::fair_queue_key(&c)).query(con).unwrap();
    pttl == -2 && queued > 0
}
