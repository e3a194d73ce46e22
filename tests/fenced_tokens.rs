//! Fencing tokens: strictly increasing for a name over the lock's whole
//! life (holders, re-entries, releases, force releases, expiries and an
//! AOF restart); and the RLOCK commands release, renew, force release and
//! report a fenced lock, leaving its token counter alone.

use redis::{Commands, Connection, Value};
use std::time::Duration;
use testkit::{publications, Rng, Server};

const OWNERS: [&str; 3] = ["u:1", "u:2", "u:3"];

fn acquire(con: &mut Connection, owner: &str, lease: i64) -> (i64, i64) {
    redis::cmd("RFENCED.ACQUIRE").arg("fence").arg(owner).arg(lease).query(con).unwrap()
}

fn token(con: &mut Connection) -> i64 {
    redis::cmd("RFENCED.TOKEN").arg("fence").query(con).unwrap()
}

#[test]
fn tokens_strictly_increase_across_releases_expiries_and_an_aof_restart() {
    let mut server = Server::builder().config("appendonly", "yes").config("appendfsync", "always").start();
    let mut con = server.connection();
    let mut rng = Rng::from_env("fenced_tokens");
    let (mut last, mut grants, mut holder): (i64, usize, Option<&str>) = (0, 0, None);
    for attempt in 0..2_000 {
        if attempt == 1_000 {
            server.restart();
            con = server.connection();
            assert_eq!(token(&mut con), last, "the AOF replay kept the counter");
        }
        let owner = *rng.pick(&OWNERS);
        let lease = if rng.chance(5) { 5 } else { 60_000 };
        let reply = acquire(&mut con, owner, lease);
        match reply {
            (-1, token) => {
                assert!(token > last, "attempt {attempt}: token {token} after {last}");
                (last, grants, holder) = (token, grants + 1, Some(owner));
            }
            (pttl, -1) => assert!(pttl >= 0 && holder.is_some_and(|h| h != owner), "attempt {attempt}: [{pttl}, -1]"),
            other => panic!("attempt {attempt}: {other:?}"),
        }
        assert_eq!(token(&mut con), last);
        if lease == 5 && reply.0 == -1 {
            // Let the short lease end.
            std::thread::sleep(Duration::from_millis(10));
            holder = None;
        } else if rng.chance(10) {
            let _: i64 = redis::cmd("RLOCK.FORCERELEASE").arg("fence").query(&mut con).unwrap();
            holder = None;
        } else if let Some(owner) = holder.filter(|_| rng.chance(40)) {
            let _: Option<i64> = redis::cmd("RLOCK.RELEASE").arg("fence").arg(owner).query(&mut con).unwrap();
            let held: i64 = redis::cmd("HEXISTS").arg("fence").arg(owner).query(&mut con).unwrap();
            holder = (held == 1).then_some(owner);
        }
    }
    assert!(grants > 800, "{grants} grants");
    let pttl: i64 = con.pttl("redisson_lock_token:{fence}").unwrap();
    assert_eq!(pttl, -1, "the token counter never expires");
}

#[test]
fn rlock_commands_work_on_a_fenced_lock_and_leave_its_counter() {
    let server = Server::start();
    let mut con = server.connection();
    assert_eq!(acquire(&mut con, "u:1", 60_000), (-1, 1));
    assert_eq!(acquire(&mut con, "u:1", 60_000), (-1, 2));
    let status: Vec<Value> = redis::cmd("RLOCK.STATUS").arg("fence").arg("u:1").query(&mut con).unwrap();
    assert_eq!(status[9], Value::Int(2), "hold count: {status:?}");
    let renewed: i64 = redis::cmd("RLOCK.RENEW").arg("fence").arg("u:1").arg(600_000).query(&mut con).unwrap();
    let pttl: i64 = con.pttl("fence").unwrap();
    assert!(renewed == 1 && pttl > 60_000, "renewed {renewed}, PTTL {pttl}");
    let released = publications(&server, |con| {
        let once: i64 = redis::cmd("RLOCK.RELEASE").arg("fence").arg("u:1").query(con).unwrap();
        let twice: i64 = redis::cmd("RLOCK.RELEASE").arg("fence").arg("u:1").query(con).unwrap();
        assert_eq!((once, twice), (0, 1));
    });
    assert_eq!(released, [("redisson_lock__channel:{fence}".to_owned(), "0".to_owned())]);
    assert_eq!(acquire(&mut con, "u:2", 60_000), (-1, 3));
    let (pttl, no_token) = acquire(&mut con, "u:1", 60_000);
    assert!(pttl > 0 && no_token == -1, "contended: [{pttl}, {no_token}]");
    let forced: i64 = redis::cmd("RLOCK.FORCERELEASE").arg("fence").query(&mut con).unwrap();
    assert_eq!(forced, 1);
    assert_eq!(token(&mut con), 3, "release and force release leave the counter");
    assert_eq!(acquire(&mut con, "u:1", 60_000), (-1, 4));
}
