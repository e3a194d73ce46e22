//! The fair lock's purge of many dead waiters spread through the queue:
//! one pass over the list, written again in one go and replicated as such
//! (`DEL` and one `RPUSH` of the survivors), so a replica without the
//! module ends with the same queue.

use redis::Value;
use std::time::Duration;
use testkit::{server_time_ms, FairScripts, Server};

const WAITERS: usize = 200;

#[test]
fn dead_waiters_spread_through_the_queue_are_purged_in_one_pass() {
    let master = Server::shared();
    let replica = Server::builder().without_module().start();
    replica.replicate(&master);
    let mut con = master.connection();
    let _: Value = redis::cmd("RFAIR.ACQUIRE").arg("long").arg("holder").arg(60_000).query(&mut con).unwrap();
    // Every other waiter is a Redisson script's (the server keeps no memory
    // of its deadline), and dies: its deadline passed. Dead ones sit between
    // live ones, so the purge must search the queue, not pop its head.
    let scripts = FairScripts::default();
    scripts.load(&mut con).unwrap();
    let now = server_time_ms(&mut con);
    let mut pipe = redis::pipe();
    for n in 0..WAITERS {
        let owner = format!("w{n}");
        match n % 2 {
            0 => pipe.add_command(scripts.acquire(b"long", owner.as_bytes(), 60_000, Some(600_000), now)).ignore(),
            _ => pipe.cmd("RFAIR.ACQUIRE").arg("long").arg(owner).arg(60_000).arg("WAIT").arg(600_000).ignore(),
        };
    }
    let _: () = pipe.query(&mut con).unwrap();
    let mut deadlines = redis::pipe();
    for n in (0..WAITERS).step_by(2) {
        deadlines.cmd("ZADD").arg("redisson_lock_timeout:{long}").arg("XX").arg(1).arg(format!("w{n}")).ignore();
    }
    let _: () = deadlines.query(&mut con).unwrap();
    let _: () = redis::cmd("DEL").arg("long").query(&mut con).unwrap();

    let reply: Value =
        redis::cmd("RFAIR.ACQUIRE").arg("long").arg("w1").arg(60_000).arg("WAIT").arg(600_000).query(&mut con).unwrap();
    assert_eq!(reply, Value::Nil, "the first live waiter takes the free lock");
    let queue: Vec<String> =
        redis::cmd("LRANGE").arg("redisson_lock_queue:{long}").arg(0).arg(-1).query(&mut con).unwrap();
    let expected: Vec<String> = (3..WAITERS).step_by(2).map(|n| format!("w{n}")).collect();
    assert_eq!(queue, expected, "every dead waiter purged, the live ones in order");
    let deadlines: i64 = redis::cmd("ZCARD").arg("redisson_lock_timeout:{long}").query(&mut con).unwrap();
    assert_eq!(deadlines, expected.len() as i64);

    let acked: i64 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut con).unwrap();
    assert_eq!(acked, 1);
    let mut replica_con = replica.connection();
    replica_con.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let on_replica: Vec<String> =
        redis::cmd("LRANGE").arg("redisson_lock_queue:{long}").arg(0).arg(-1).query(&mut replica_con).unwrap();
    assert_eq!(on_replica, queue, "the replica has the same queue");
}
