//! `RLOCK.ACQUIRE … WAIT` under races and odd use: kills in the grant's
//! turn, overwrites by store commands, wait ends racing lease ends and
//! releases, many waiters on many locks, one owner blocked twice, the
//! shortest and longest waits, eviction.

mod blocking_support;

use blocking_support::*;
use redis::{Commands, Value};
use testkit::{eventually, rlock_info, Server, PATIENCE};

/// CLIENT KILL by several filters: killed waiters leave; nothing is
/// granted to them; the survivors are served in order.
#[test]
fn client_kill_by_filters_removes_waiters() {
    let server = Server::shared();
    let mut con = server.connection();
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("other")
        .arg("on")
        .arg("nopass")
        .arg("+@all")
        .arg("~*")
        .arg("&*")
        .query(&mut con)
        .unwrap();
    acquire(&mut con, "k", "holder", LONG_LEASE);
    let killed: Vec<_> = (0..3).map(|n| waiter(&server, "k", &format!("dead{n}"), 10_000, |_, reply| reply)).collect();
    // A survivor logged in as another user.
    let mut admin = server.connection();
    let mut survivor_con = server.connection();
    let _: () = redis::cmd("AUTH").arg("other").arg("x").query(&mut survivor_con).unwrap();
    let survivor = std::thread::spawn(move || {
        let reply: Value = redis::cmd("RLOCK.ACQUIRE")
            .arg("k")
            .arg("alive")
            .arg(LONG_LEASE)
            .arg("WAIT")
            .arg(10_000)
            .query(&mut survivor_con)
            .unwrap();
        in_step(&mut survivor_con);
        reply
    });
    eventually("4 blocked", PATIENCE, || rlock_info(&mut admin, "blocked") == 4);
    let n: i64 =
        redis::cmd("CLIENT").arg("KILL").arg("USER").arg("default").arg("SKIPME").arg("yes").query(&mut con).unwrap();
    assert!(n >= 3, "{n}");
    for k in killed {
        assert!(matches!(k.join().unwrap(), Value::SimpleString(_)));
    }
    let mut con = server.connection();
    assert_eq!(rlock_info(&mut con, "blocked"), 1);
    assert_eq!(release(&mut con, "k", "holder"), Value::Int(1));
    assert_eq!(survivor.join().unwrap(), Value::Nil);
    assert_eq!(holders(&mut con, "k"), vec!["alive"]);
    assert_eq!(rlock_info(&mut con, "blocked"), 0);
}

/// A waiter killed in the same turn as the release that grants it: one
/// reply at most, and the lock is held by it (a lease will free it) or by
/// the next in line, never by two.
#[test]
fn a_waiter_killed_in_the_same_turn_as_its_grant() {
    let server = Server::shared();
    let mut con = server.connection();
    for round in 0..20 {
        let key = format!("k{round}");
        acquire(&mut con, &key, "holder", LONG_LEASE);
        let victim = waiter(&server, &key, "victim", 10_000, |_, reply| reply);
        let next = waiter(&server, &key, "next", 10_000, |con, reply| {
            in_step(con);
            reply
        });
        let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut con).unwrap();
        let id = list
            .lines()
            .filter(|l| l.contains("cmd=rlock.acquire"))
            .filter_map(|l| l.split(' ').find_map(|f| f.strip_prefix("id=")).map(|id| id.parse::<u64>().unwrap()))
            .min()
            .unwrap();
        let mut pipe = redis::pipe();
        if round % 2 == 0 {
            pipe.cmd("RLOCK.RELEASE").arg(&key).arg("holder").cmd("CLIENT").arg("KILL").arg("ID").arg(id);
        } else {
            pipe.cmd("CLIENT").arg("KILL").arg("ID").arg(id).cmd("RLOCK.RELEASE").arg(&key).arg("holder");
        }
        let _: Value = pipe.query(&mut con).unwrap();
        let _ = victim.join().unwrap();
        let held = holders(&mut con, &key);
        assert_eq!(held.len(), 1, "{held:?}");
        if held == ["next"] {
            assert_eq!(next.join().unwrap(), Value::Nil);
        } else {
            assert_eq!(held, ["victim"]);
            assert_eq!(rlock_info(&mut con, "blocked"), 1);
            let _: i64 = redis::cmd("RLOCK.FORCERELEASE").arg(&key).query(&mut con).unwrap();
            assert_eq!(next.join().unwrap(), Value::Nil);
        }
    }
    assert_eq!(rlock_info(&mut con, "blocked"), 0);
}

/// Overwrites of a lock by COPY … REPLACE (its event is listened to: the
/// error at once) and by SUNIONSTORE (a set event, not listened to: the
/// error at the wait's end): each waiter gets the WRONGTYPE error of an
/// acquire, never a PTTL.
#[test]
fn a_lock_overwritten_by_a_store_command_gives_waiters_an_error() {
    let server = Server::shared();
    let mut con = server.connection();
    let _: i64 = con.sadd("src-set", "m").unwrap();
    let mut failures = vec![];
    for how in ["SUNIONSTORE", "COPY"] {
        let key = format!("k-{how}");
        acquire(&mut con, &key, "holder", LONG_LEASE);
        let w = waiter(&server, &key, "w", 1_500, |con, reply| {
            in_step(con);
            reply
        });
        let _: i64 = match how {
            "SUNIONSTORE" => redis::cmd("SUNIONSTORE").arg(&key).arg("src-set").query(&mut con).unwrap(),
            _ => redis::cmd("COPY").arg("src-set").arg(&key).arg("REPLACE").query(&mut con).unwrap(),
        };
        let reply = w.join().unwrap();
        if !matches!(reply, Value::SimpleString(ref e) if e.contains("WRONGTYPE")) {
            failures.push(format!("{how}: the waiter replied {reply:?} after its whole wait"));
        }
    }
    assert_eq!(rlock_info(&mut con, "blocked"), 0);
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Lease ends and wait ends landing in the same millisecond, and releases
/// racing 1 ms waits: every call one reply, consistent with the lock.
#[test]
fn wait_ends_racing_lease_ends_and_releases_stay_consistent() {
    let server = Server::shared();
    let mut con = server.connection();
    let mut granted = 0;
    for round in 0..150 {
        let key = format!("r{round}");
        let lease = if round % 2 == 0 { "20" } else { LONG_LEASE };
        acquire(&mut con, &key, "holder", lease);
        let mut wcon = server.connection();
        let k = key.clone();
        let wait = if round % 2 == 0 { 20 } else { 1 + round % 3 };
        let t = std::thread::spawn(move || {
            let reply: Value = redis::cmd("RLOCK.ACQUIRE")
                .arg(&k)
                .arg("w")
                .arg(LONG_LEASE)
                .arg("WAIT")
                .arg(wait)
                .query(&mut wcon)
                .unwrap();
            in_step(&mut wcon);
            reply
        });
        if round % 2 == 1 {
            assert_eq!(release(&mut con, &key, "holder"), Value::Int(1));
        }
        let reply = t.join().unwrap();
        let held = holders(&mut con, &key);
        match reply {
            Value::Nil => {
                granted += 1;
                assert_eq!(held, vec!["w"], "round {round}: granted but not holding");
            }
            Value::Int(_) => assert!(!held.contains(&"w".to_string()), "round {round}: timed out but holds: {held:?}"),
            other => panic!("round {round}: {other:?}"),
        }
    }
    eprintln!("granted {granted} of 150");
    eventually("nobody blocked", PATIENCE, || rlock_info(&mut con, "blocked") == 0);
}

/// Many callers on a few locks, waits of random length, long leases (only
/// releases hand off): a caller granted the lock holds it alone, and its
/// release (of a full hold) replies 1; at the end nothing is blocked.
#[test]
fn many_waiters_on_many_locks_exclude_each_other_and_leave_nothing() {
    let server = Server::shared();
    let threads: Vec<_> = (0..16)
        .map(|t| {
            let mut con = server.connection();
            std::thread::spawn(move || {
                let mut rng = t as u64 * 7919 + 1;
                let mut wins = 0;
                for i in 0..60 {
                    rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let key = format!("m{}", (rng >> 33) % 4);
                    let wait = 1 + (rng >> 40) % 200;
                    let me = format!("t{t}-{i}");
                    let reply: Value = redis::cmd("RLOCK.ACQUIRE")
                        .arg(&key)
                        .arg(&me)
                        .arg(LONG_LEASE)
                        .arg("WAIT")
                        .arg(wait)
                        .query(&mut con)
                        .unwrap();
                    match reply {
                        Value::Nil => {
                            wins += 1;
                            let held: Vec<String> = con.hkeys(&key).unwrap();
                            assert_eq!(held, vec![me.clone()], "two holders");
                            let r: Value = redis::cmd("RLOCK.RELEASE").arg(&key).arg(&me).query(&mut con).unwrap();
                            assert_eq!(r, Value::Int(1));
                        }
                        Value::Int(_) => {}
                        other => panic!("{other:?}"),
                    }
                    in_step(&mut con);
                }
                wins
            })
        })
        .collect();
    let wins: i32 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    eprintln!("wins {wins}");
    let mut con = server.connection();
    assert_eq!(rlock_info(&mut con, "blocked"), 0);
    for k in 0..4 {
        assert!(holders(&mut con, &format!("m{k}")).is_empty());
    }
    assert_no_crash(&server);
}

/// The same owner blocked on two connections, and a waiter that is the
/// holder already (re-enters without blocking).
#[test]
fn the_same_owner_blocked_twice_and_a_reentering_waiter() {
    let server = Server::shared();
    let mut con = server.connection();
    acquire(&mut con, "k", "holder", LONG_LEASE);
    let reenter: Value = redis::cmd("RLOCK.ACQUIRE")
        .arg("k")
        .arg("holder")
        .arg(LONG_LEASE)
        .arg("WAIT")
        .arg(1000)
        .query(&mut con)
        .unwrap();
    assert_eq!(reenter, Value::Nil, "the holder re-enters at once");
    assert_eq!(rlock_info(&mut con, "blocked"), 0);
    let a = waiter(&server, "k", "same", 10_000, |con, reply| {
        in_step(con);
        reply
    });
    let b = waiter(&server, "k", "same", 10_000, |con, reply| {
        in_step(con);
        reply
    });
    assert_eq!(release(&mut con, "k", "holder"), Value::Int(0));
    assert_eq!(release(&mut con, "k", "holder"), Value::Int(1));
    assert_eq!(a.join().unwrap(), Value::Nil);
    // The second connection of the same owner re-enters (as its acquire
    // would without WAIT): both granted, a hold count of 2.
    assert_eq!(b.join().unwrap(), Value::Nil);
    let count: i64 = con.hget("k", "same").unwrap();
    assert_eq!(count, 2);
    assert_eq!(holders(&mut con, "k"), vec!["same"]);
    assert_eq!(rlock_info(&mut con, "blocked"), 0);
}

/// Waits of 1 ms and of 365 days; a wait of 365 days + 1 ms refused.
#[test]
fn the_shortest_and_longest_waits() {
    let server = Server::shared();
    let mut con = server.connection();
    acquire(&mut con, "k", "holder", LONG_LEASE);
    let short: Value = redis::cmd("RLOCK.ACQUIRE").arg("k").arg("w").arg("WAIT").arg(1).query(&mut con).unwrap();
    assert!(matches!(short, Value::Int(_)), "{short:?}");
    let long = waiter(&server, "k", "year", 31_536_000_000, |con, reply| {
        in_step(con);
        reply
    });
    let too_long: redis::RedisResult<Value> =
        redis::cmd("RLOCK.ACQUIRE").arg("k").arg("w").arg("WAIT").arg(31_536_000_001i64).query(&mut con);
    assert!(too_long.is_err(), "{too_long:?}");
    assert_eq!(release(&mut con, "k", "holder"), Value::Int(1));
    assert_eq!(long.join().unwrap(), Value::Nil);
    // A year-long wait on a lock with a year-long lease, then killed.
    acquire(&mut con, "k2", "holder", "31536000000");
    let _gone = waiter(&server, "k2", "year", 31_536_000_000, |_, reply| reply);
    let n: i64 =
        redis::cmd("CLIENT").arg("KILL").arg("TYPE").arg("normal").arg("SKIPME").arg("yes").query(&mut con).unwrap();
    assert!(n >= 1);
    eventually("nobody blocked", PATIENCE, || rlock_info(&mut con, "blocked") == 0);
    assert_no_crash(&server);
}

/// maxmemory with allkeys-random: the lock key evicted under its waiter.
/// The waiter is granted (and its grant may be evicted again, but never
/// shows a holder that is not it).
#[test]
fn an_evicted_lock_is_granted_to_its_waiter() {
    let server = Server::shared();
    let mut con = server.connection();
    let _: () = redis::cmd("CLIENT").arg("NO-EVICT").arg("on").query(&mut con).unwrap();
    acquire(&mut con, "k", "holder", LONG_LEASE);
    let w = waiter(&server, "k", "w", 10_000, |con, reply| {
        in_step(con);
        reply
    });
    let used: String = redis::cmd("INFO").arg("memory").query(&mut con).unwrap();
    let used: i64 = used.lines().find_map(|l| l.strip_prefix("used_memory:")).unwrap().trim().parse().unwrap();
    let _: () = redis::cmd("CONFIG").arg("SET").arg("maxmemory-policy").arg("allkeys-random").query(&mut con).unwrap();
    let _: () = redis::cmd("CONFIG").arg("SET").arg("maxmemory").arg(used + 2_000_000).query(&mut con).unwrap();
    let value = "x".repeat(10_000);
    let mut i = 0;
    eventually("the lock evicted", PATIENCE, || {
        let mut fill = redis::pipe();
        for _ in 0..20 {
            fill.set(format!("fill{i}"), &value).ignore();
            i += 1;
        }
        let _: () = fill.query(&mut con).unwrap();
        holders(&mut con, "k") != ["holder"]
    });
    let _: () = redis::cmd("CONFIG").arg("SET").arg("maxmemory").arg(0).query(&mut con).unwrap();
    assert_eq!(w.join().unwrap(), Value::Nil);
    let held = holders(&mut con, "k");
    assert!(held.is_empty() || held == ["w"], "{held:?}");
    assert_eq!(rlock_info(&mut con, "blocked"), 0);
    assert_no_crash(&server);
}
