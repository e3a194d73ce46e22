//! Fencing tokens: strictly increasing for a name over the lock's whole
//! life (holders, re-entries, releases, force releases, expiries and an
//! AOF restart); and the RLOCK commands release, renew, force release and
//! report a fenced lock, leaving its token counter alone; and tokens that
//! survive failover (a promoted replica's are above the old primary's).

use redis::{Commands, Connection, Value};
use testkit::{eventually, publications, Rng, Server, PATIENCE};

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
            eventually("the short lease's end", PATIENCE, || con.pttl::<_, i64>("fence").unwrap() == -2);
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
    // Exact tokens: no jump at the term's floor.
    let server = Server::builder().module_arg("fencing-token-jump").module_arg("no").start();
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

/// A replica is promoted, and its old primary goes on granting (as one cut
/// off from the rest would): the promoted replica never gets those tokens,
/// yet its own are above every one of them, since its term's floor is. The
/// control, `fencing-token-jump no`, gives again a token the old primary gave.
#[test]
fn a_promoted_replica_gives_tokens_above_every_token_the_old_primary_gave() {
    for jump in ["yes", "no"] {
        let start = || Server::builder().module_arg("fencing-token-jump").module_arg(jump).start();
        let (primary, replica) = (start(), start());
        replica.replicate(&primary);
        let mut con = primary.connection();
        acquire(&mut con, "u:1", 600_000);
        let acknowledged: i64 = redis::cmd("WAIT").arg(1).arg(5_000).query(&mut con).unwrap();
        assert_eq!(acknowledged, 1, "the replica has the first token");
        let mut promoted = replica.connection();
        let _: () = redis::cmd("REPLICAOF").arg("NO").arg("ONE").query(&mut promoted).unwrap();
        let given: Vec<i64> = (0..3).map(|_| acquire(&mut con, "u:1", 600_000).1).collect();
        assert!(token(&mut promoted) < given[0], "{jump}: the promoted replica missed the old primary's tokens");
        // The holder the replica knows re-enters, and takes the next token.
        let (held, next) = acquire(&mut promoted, "u:1", 600_000);
        assert_eq!(held, -1, "{jump}: granted");
        let info: String = redis::cmd("INFO").arg("rlock").query(&mut promoted).unwrap();
        if jump == "yes" {
            assert!(next > given[2], "a token {next} not above the old primary's {given:?}");
            assert!(info.contains("rlock_role_changes:2"), "to replica, then to primary: {info}");
        } else {
            assert!(given.contains(&next), "control: {next} not among {given:?}");
            assert!(info.contains("rlock_fencing_token_floor:0"), "{info}");
        }
    }
}
