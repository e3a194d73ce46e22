//! The server's own moves: the lease and deadline ends ahead (which a
//! step waits out), and following the turns the server's timer gives.

use super::Scores;
use redis::Connection;
use testkit::{expiry_ends, twin, Side};

/// Ends of both twins' leases and of their waiters' deadlines (absolute).
pub fn events(con: &mut Connection, name: &[u8]) -> Vec<i64> {
    let twins = [Side::Scripts, Side::Commands].map(|side| twin(side, name));
    let mut ends = expiry_ends(con, &twins);
    for twin in twins {
        let scores: Vec<(Vec<u8>, i64)> = redis::cmd("ZRANGE")
            .arg(rlock_protocol::fair_timeout_key(&twin))
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query(con)
            .unwrap();
        ends.extend(scores.into_iter().map(|(_, score)| score));
    }
    ends
}

/// Takes out of the script twin's queue the dead waiters behind a live
/// one. Redisson's deadlines grow along the queue, so its head-only purge
/// reaches every dead waiter; only the commands' "asks again stays alive"
/// rule, copied into the twin, puts a live waiter before a dead one. The
/// commands purge such a waiter on every touch; the scripts would keep it
/// and base the next waiter's deadline on it.
pub fn drop_dead_behind_live(con: &mut Connection, name: &[u8], now: i64) {
    let s = twin(Side::Scripts, name);
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
    let (s, c) = (twin(Side::Scripts, name), twin(Side::Commands, name));
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
    let c = twin(Side::Commands, name);
    let (pttl, queued): (i64, i64) =
        redis::pipe().cmd("PTTL").arg(&c).cmd("LLEN").arg(rlock_protocol::fair_queue_key(&c)).query(con).unwrap();
    pttl == -2 && queued > 0
}
