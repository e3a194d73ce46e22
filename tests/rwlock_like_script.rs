//! The RRW forms Redisson's read-write lock texts run as (see
//! `src/rwlock/redisson.rs`) on a real server: `RRW.RENEWREADS` declares
//! every lock it renews (COMMAND GETKEYS, ACL), renews a batch of several
//! locks as ReadLockTask's script does, and refuses a batch with a bad
//! lock before writing any; `RRW.READLOCKED`; `LIKESCRIPT`'s syntax.

use redis::{Connection, RedisResult, Value};
use testkit::{error_text, Server};

fn run(con: &mut Connection, args: &[&str]) -> RedisResult<Value> {
    redis::cmd(args[0]).arg(&args[1..]).query(con)
}

fn pttl(con: &mut Connection, key: &str) -> i64 {
    redis::cmd("PTTL").arg(key).query(con).unwrap()
}

fn ints(values: &[i64]) -> Value {
    Value::Array(values.iter().map(|value| Value::Int(*value)).collect())
}

#[test]
fn renewreads_declares_every_lock_to_cluster_routing_and_acl() {
    let server = Server::shared();
    let mut admin = server.connection();
    let batch = ["RRW.RENEWREADS", "2", "locks:a", "other", "30000", "1", "o", "2", "o", "p"];
    let keys: Vec<String> = redis::cmd("COMMAND").arg("GETKEYS").arg(&batch[..]).query(&mut admin).unwrap();
    assert_eq!(keys, ["locks:a", "other"]);
    let _: () = redis::cmd("ACL").arg(&["SETUSER", "svc", "on", ">pw", "~locks:*", "+@all"]).query(&mut admin).unwrap();
    let mut con = server.connection();
    let _: () = redis::cmd("AUTH").arg(&["svc", "pw"]).query(&mut con).unwrap();
    assert!(error_text(run(&mut con, &batch)).starts_with("NOPERM"), "a lock outside the user's keys");
    let allowed = ["RRW.RENEWREADS", "1", "locks:a", "30000", "1", "o"];
    assert_eq!(run(&mut con, &allowed).unwrap(), ints(&[0]));
}

#[test]
fn renewreads_renews_each_lock_of_a_batch_as_the_script_does() {
    let server = Server::shared();
    let mut con = server.connection();
    for (name, owner) in [("a", "o"), ("a", "o"), ("a", "p"), ("b", "p")] {
        run(&mut con, &["RRW.ACQUIRE", name, owner, "READ", "600000"]).unwrap();
    }
    let renewed = run(&mut con, &["RRW.RENEWREADS", "3", "a", "b", "c", "2000", "1", "o", "1", "o", "2", "o", "p"]);
    assert_eq!(renewed.unwrap(), ints(&[1, 0, 0]), "b is held by p only, c by nobody");
    // The hash's TTL becomes the lease (shorter too), o's holds too; p's stay.
    assert!((1_000..=2_000).contains(&pttl(&mut con, "a")));
    for hold in ["{a}:o:rwlock_timeout:1", "{a}:o:rwlock_timeout:2"] {
        assert!((1_000..=2_000).contains(&pttl(&mut con, hold)), "{hold}");
    }
    assert!(pttl(&mut con, "{a}:p:rwlock_timeout:1") > 500_000);
    assert!(pttl(&mut con, "b") > 500_000);

    // A key that is no lock refuses the whole batch: nothing renewed.
    let _: () = redis::cmd("SET").arg("s").arg("x").query(&mut con).unwrap();
    let refused = run(&mut con, &["RRW.RENEWREADS", "2", "b", "s", "3000", "1", "p", "1", "p"]);
    assert!(error_text(refused).contains("WRONGTYPE"));
    assert!(pttl(&mut con, "b") > 500_000, "the first lock untouched");
}

#[test]
fn renewreads_and_likescript_refuse_bad_arguments() {
    let server = Server::shared();
    let mut con = server.connection();
    for bad in [
        &["RRW.RENEWREADS", "0", "a", "3000", "1", "o"][..],
        &["RRW.RENEWREADS", "2", "a", "3000", "1", "o"],
        &["RRW.RENEWREADS", "1", "a", "3000", "2", "o"],
        &["RRW.RENEWREADS", "1", "a", "3000", "1", "o", "extra"],
        &["RRW.RENEWREADS", "1", "a", "3000", "0", "o"],
    ] {
        assert!(error_text(run(&mut con, bad)).contains("syntax"), "{bad:?}");
    }
    let text = error_text(run(&mut con, &["RRW.RENEWREADS", "1", "a", "0", "1", "o"]));
    assert!(text.contains("lease"), "{text}");
    for bad in [
        &["RRW.ACQUIRE", "a", "o", "WRITE", "3000", "REPLY", "FULL", "LIKESCRIPT"][..],
        &["RRW.ACQUIRE", "a", "o", "WRITE", "3000", "WAIT", "10", "LIKESCRIPT"],
    ] {
        assert!(error_text(run(&mut con, bad)).contains("LIKESCRIPT"), "{bad:?}");
    }
    assert_eq!(run(&mut con, &["EXISTS", "a"]).unwrap(), Value::Int(0), "nothing written");
}

#[test]
fn readlocked_answers_as_redissons_read_lock_is_locked() {
    let server = Server::shared();
    let mut con = server.connection();
    let locked = |con: &mut Connection| run(con, &["RRW.READLOCKED", "rw"]).unwrap();
    assert_eq!(locked(&mut con), Value::Int(0), "free");
    run(&mut con, &["RRW.ACQUIRE", "rw", "w", "WRITE", "30000"]).unwrap();
    assert_eq!(locked(&mut con), Value::Int(0), "a writer alone");
    run(&mut con, &["RRW.ACQUIRE", "rw", "w", "READ", "30000"]).unwrap();
    assert_eq!(locked(&mut con), Value::Int(1), "the writer's reads");
    run(&mut con, &["RRW.FORCERELEASE", "rw"]).unwrap();
    run(&mut con, &["RRW.ACQUIRE", "rw", "r", "READ", "30000"]).unwrap();
    assert_eq!(locked(&mut con), Value::Int(1), "a reader");
    let _: () = redis::cmd("SET").arg("rw").arg("x").query(&mut con).unwrap();
    assert!(error_text(run(&mut con, &["RRW.READLOCKED", "rw"])).contains("WRONGTYPE"));
}

/// The forms' writes reach a replica without the module as they are on
/// the primary: fields, holds and absolute expiries (the grown write
/// lease, the deleted lock, the batch's and 3.x renewals).
#[test]
fn a_replica_without_the_module_mirrors_the_script_forms() {
    let primary = Server::shared();
    let replica = Server::builder().without_module().start();
    replica.replicate(&primary);
    let mut con = primary.connection();
    for args in [
        &["RRW.ACQUIRE", "w", "o", "WRITE", "30000", "LIKESCRIPT"][..],
        &["RRW.ACQUIRE", "w", "o", "WRITE", "30000", "LIKESCRIPT"],
        &["RRW.ACQUIRE", "gone", "o", "WRITE", "30000"],
        &["PERSIST", "gone"],
        &["RRW.ACQUIRE", "gone", "o", "WRITE", "1", "LIKESCRIPT"],
        &["RRW.ACQUIRE", "r", "a", "READ", "600000"],
        &["RRW.ACQUIRE", "r", "a", "READ", "600000"],
        &["RRW.ACQUIRE", "r", "b", "READ", "600000"],
        &["RRW.RENEWREADS", "2", "r", "w", "4000", "1", "a", "1", "a"],
        &["RRW.ACQUIRE", "r3", "a", "READ", "600000", "LIKESCRIPT"],
        &["RRW.ACQUIRE", "r3", "b", "READ", "600000"],
        &["RRW.RENEW", "r3", "a", "5000", "LIKESCRIPT"],
    ] {
        run(&mut con, args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    }
    let acked: i64 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut con).unwrap();
    assert_eq!(acked, 1, "the replica acknowledged");
    let keys = ["w", "gone", "r", "{r}:a:rwlock_timeout:1", "{r}:a:rwlock_timeout:2", "{r}:b:rwlock_timeout:1"];
    let keys = keys.into_iter().chain(["r3", "{r3}:a:rwlock_timeout:1", "{r3}:b:rwlock_timeout:1"]);
    let state = |con: &mut Connection| -> Vec<(String, Value, i64)> {
        keys.clone()
            .map(|key| {
                let kind: String = redis::cmd("TYPE").arg(key).query(con).unwrap();
                let value = match kind.as_str() {
                    "hash" => redis::cmd("HGETALL").arg(key).query(con).unwrap(),
                    _ => redis::cmd("GET").arg(key).query(con).unwrap(),
                };
                (key.to_owned(), value, redis::cmd("PEXPIRETIME").arg(key).query(con).unwrap())
            })
            .collect()
    };
    let on_primary = state(&mut con);
    assert_eq!(on_primary[1].2, -2, "PTTL -1 plus a lease of 1: deleted");
    assert!(pttl(&mut con, "w") > 55_000, "the write lease grew");
    assert!((1_000..=4_000).contains(&pttl(&mut con, "r")), "the batch set the lease");
    assert!((1_000..=5_000).contains(&pttl(&mut con, "{r3}:b:rwlock_timeout:1")), "3.x renews every reader");
    assert_eq!(state(&mut replica.connection()), on_primary, "the replica differs");
}
