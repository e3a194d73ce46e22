//! The fair-lock Lua transcriptions walk each branch of Redisson's fair lock
//! on a plain redis-server, with Redisson's keys and arguments.

use redis::{Commands, Connection, Value};
use rlock_protocol::{fair_queue_key, fair_timeout_key, fair_waiter_channel, unlock_latch_key};
use testkit::{publications, server_time_ms, Caller, FairScripts, RedissonScripts, Server};

const NAME: &[u8] = b"f";
const LEASE: i64 = 30_000;
const WAIT: i64 = 60_000;

fn setup(caller: Caller) -> (Server, Connection, FairScripts) {
    let server = Server::builder().without_module().start();
    let mut con = server.connection();
    let scripts = FairScripts::with_caller(caller);
    scripts.load(&mut con).unwrap();
    (server, con, scripts)
}

fn queue(con: &mut Connection) -> Vec<(String, i64)> {
    let owners: Vec<String> = con.lrange(fair_queue_key(NAME), 0, -1).unwrap();
    let timeouts = fair_timeout_key(NAME);
    owners.into_iter().map(|owner| (owner.clone(), con.zscore(&timeouts, owner).unwrap())).collect()
}

#[test]
fn waiters_queue_in_order_and_the_release_tells_the_head_on_its_own_channel() {
    let (server, mut con, fair) = setup(Caller::default());
    let now = server_time_ms(&mut con);
    assert_eq!(fair.acquire(NAME, b"a", LEASE, Some(WAIT), now).query::<Value>(&mut con).unwrap(), Value::Nil);
    let hint_b: i64 = fair.acquire(NAME, b"b", LEASE, Some(WAIT), now).query(&mut con).unwrap();
    assert!(hint_b > 0 && hint_b <= LEASE, "the first waiter's base is the lock's PTTL: {hint_b}");
    let hint_c: i64 = fair.acquire(NAME, b"c", LEASE, Some(WAIT), now).query(&mut con).unwrap();
    assert_eq!(hint_c, hint_b + WAIT, "the next waiter's base is the tail's deadline - now");
    let b_deadline = now + hint_b + WAIT;
    assert_eq!(queue(&mut con), [("b".into(), b_deadline), ("c".into(), b_deadline + WAIT)]);

    let published = publications(&server, |con| {
        assert_eq!(fair.release(NAME, b"a", LEASE, b"r1", now).query::<i64>(con).unwrap(), 1);
    });
    let channel = String::from_utf8(fair_waiter_channel(NAME, b"b")).unwrap();
    assert_eq!(published, [(channel, "0".into())]);

    let hint: i64 = fair.acquire(NAME, b"c", LEASE, Some(WAIT), now).query(&mut con).unwrap();
    assert_eq!(hint, 0, "a free lock whose head has not taken it yet");
    assert_eq!(fair.acquire(NAME, b"b", LEASE, Some(WAIT), now).query::<Value>(&mut con).unwrap(), Value::Nil);
    assert_eq!(queue(&mut con), [("c".into(), b_deadline)], "the others' deadlines move up by wait");
}

/// Also proves ARGV 3 and 4 are swapped in the no-wait form: read the
/// other way round, `now` would be 300000 and purge nothing.
#[test]
fn the_no_wait_form_purges_a_dead_head_by_now_and_never_queues() {
    let (_server, mut con, fair) = setup(Caller::default());
    let now = server_time_ms(&mut con);
    let _: Value = fair.acquire(NAME, b"a", LEASE, Some(WAIT), now).query(&mut con).unwrap();
    let _: i64 = fair.acquire(NAME, b"b", LEASE, Some(WAIT), now).query(&mut con).unwrap();
    assert_eq!(fair.acquire(NAME, b"c", LEASE, None, now).query::<i64>(&mut con).unwrap(), 1);
    assert_eq!(queue(&mut con).len(), 1, "the no-wait form does not queue");
    let _: () = con.del(NAME).unwrap();
    assert_eq!(fair.acquire(NAME, b"c", LEASE, None, now).query::<i64>(&mut con).unwrap(), 1, "b is head");

    let b_deadline = queue(&mut con)[0].1;
    assert_eq!(fair.acquire(NAME, b"c", LEASE, None, b_deadline).query::<Value>(&mut con).unwrap(), Value::Nil);
    assert_eq!(queue(&mut con), [], "b died at its deadline");
    assert_eq!(fair.acquire(NAME, b"c", LEASE, None, now).query::<Value>(&mut con).unwrap(), Value::Nil);
    assert_eq!(con.hget::<_, _, i64>(NAME, "c").unwrap(), 2, "re-entered");
}

#[test]
fn giving_up_moves_the_waiters_behind_up_and_leaves_the_queue() {
    let (_server, mut con, fair) = setup(Caller::default());
    let now = server_time_ms(&mut con);
    for owner in [b"a", b"b", b"c", b"d"] {
        let _: Value = fair.acquire(NAME, owner, LEASE, Some(WAIT), now).query(&mut con).unwrap();
    }
    let before = queue(&mut con);
    assert_eq!(fair.cancel(NAME, b"c", WAIT).query::<Value>(&mut con).unwrap(), Value::Nil);
    assert_eq!(queue(&mut con), [before[0].clone(), ("d".into(), before[2].1 - WAIT)]);
}

#[test]
fn the_release_latch_replays_the_first_reply() {
    let (server, mut con, fair) = setup(Caller { latch_ms: 5_000, ..Caller::default() });
    let now = server_time_ms(&mut con);
    for _ in 0..2 {
        let _: Value = fair.acquire(NAME, b"a", LEASE, Some(WAIT), now).query(&mut con).unwrap();
    }
    assert_eq!(fair.release(NAME, b"x", LEASE, b"r0", now).query::<Value>(&mut con).unwrap(), Value::Nil);
    for _ in 0..2 {
        assert_eq!(fair.release(NAME, b"a", LEASE, b"r1", now).query::<i64>(&mut con).unwrap(), 0);
    }
    let latch_ttl: i64 = con.pttl(unlock_latch_key(NAME, b"r1")).unwrap();
    assert!(latch_ttl > 0 && latch_ttl <= 5_000, "the caller's latch PX: {latch_ttl}");
    assert_eq!(fair.release(NAME, b"a", LEASE, b"r2", now).query::<i64>(&mut con).unwrap(), 1);
    let published = publications(&server, |con| {
        assert_eq!(fair.release(NAME, b"a", LEASE, b"r2", now).query::<i64>(con).unwrap(), 1);
    });
    assert_eq!(published, [], "a replay does nothing else");
}

#[test]
fn a_missing_lock_or_a_force_release_tells_the_head() {
    let (server, mut con, fair) = setup(Caller::default());
    let now = server_time_ms(&mut con);
    let _: Value = fair.acquire(NAME, b"a", LEASE, Some(WAIT), now).query(&mut con).unwrap();
    let _: i64 = fair.acquire(NAME, b"b", LEASE, Some(WAIT), now).query(&mut con).unwrap();
    let channel = String::from_utf8(fair_waiter_channel(NAME, b"b")).unwrap();
    let published = publications(&server, |con| {
        assert_eq!(fair.force_release(NAME, now).query::<i64>(con).unwrap(), 1);
        assert_eq!(fair.force_release(NAME, now).query::<i64>(con).unwrap(), 0);
        assert_eq!(fair.release(NAME, b"stranger", LEASE, b"r", now).query::<i64>(con).unwrap(), 1);
    });
    assert_eq!(published, [(channel.clone(), "0".into()), (channel, "0".into())]);
    assert_eq!(con.get::<_, i64>(unlock_latch_key(NAME, b"r")).unwrap(), 1);
}

#[test]
fn the_caller_publishes_with_its_own_command() {
    let (server, mut con, fair) = setup(Caller { publish: "spublish".into(), ..Caller::default() });
    let now = server_time_ms(&mut con);
    let _: Value = fair.acquire(NAME, b"a", LEASE, Some(WAIT), now).query(&mut con).unwrap();
    let _: i64 = fair.acquire(NAME, b"b", LEASE, Some(WAIT), now).query(&mut con).unwrap();
    let mut subscriber = server.connection();
    subscriber.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    let channel = fair_waiter_channel(NAME, b"b");
    let _: Value = redis::cmd("SSUBSCRIBE").arg(&channel).query(&mut subscriber).unwrap();
    let plain = publications(&server, |con| {
        assert_eq!(fair.release(NAME, b"a", LEASE, b"r", now).query::<i64>(con).unwrap(), 1);
    });
    assert_eq!(plain, [], "nothing on plain pub/sub");
    let message: Vec<Vec<u8>> = redis::from_redis_value(subscriber.recv_response().unwrap()).unwrap();
    assert_eq!(message, [b"smessage".to_vec(), channel, b"0".to_vec()]);
}

#[test]
fn fair_locks_renew_with_the_rlock_batch_renew() {
    let (_server, mut con, fair) = setup(Caller::default());
    let rlock = RedissonScripts::default();
    rlock.load(&mut con).unwrap();
    let now = server_time_ms(&mut con);
    let _: Value = fair.acquire(NAME, b"a", 1_000, Some(WAIT), now).query(&mut con).unwrap();
    let renewed: Vec<i64> =
        rlock.renew_batch(LEASE, &[(NAME, b"a"), (NAME, b"b"), (b"other", b"a")]).query(&mut con).unwrap();
    assert_eq!(renewed, [1, 0, 0]);
    assert!(con.pttl::<_, i64>(NAME).unwrap() > 1_000);
}
