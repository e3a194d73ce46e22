//! Redisson's fair waiters (its waiting acquire, rewritten by the filter)
//! in a chain of leases nobody releases: each lease runs out, and the
//! server tells the next head its turn on its own channel, every time
//! (issue 39: the head after a grant was told only at the old head's
//! deadline, 5 s on).

mod redisson_support;

use redis::{Connection, Value};
use redisson_support::{call, family_native_count, texts};
use std::time::{Duration, Instant};
use testkit::{server_time_ms, Server};

const WAITING: &str = "8f6ed299ffd259f0539c20f89253998c0777ea75";
const LEASE_MS: u64 = 300;
const WAIT: &str = "5000";

/// Redisson 4.7.0's waiting acquire of `name` by `owner`.
fn acquire(con: &mut Connection, text: &[u8], name: &str, owner: &str) -> Value {
    let now = server_time_ms(con).to_string();
    let keys = [
        name.as_bytes(),
        &rlock_protocol::fair_queue_key(name.as_bytes()),
        &rlock_protocol::fair_timeout_key(name.as_bytes()),
    ];
    let lease = LEASE_MS.to_string();
    call(con, true, text, &keys, &[lease.as_bytes(), owner.as_bytes(), WAIT.as_bytes(), now.as_bytes()]).unwrap()
}

#[test]
fn every_head_is_told_its_turn_when_the_lease_before_runs_out() {
    let server = Server::builder().module_arg("redisson-scripts").module_arg("native").shared();
    let [text] = texts("4.7.0", &["org/redisson/RedissonFairLock"], [WAITING]);
    let mut con = server.connection();
    let _: String = redis::cmd("SCRIPT").arg("LOAD").arg(&text).query(&mut con).unwrap();
    let name = "chain";
    let owners = ["o:1", "o:2", "o:3", "o:4", "o:5"];
    let mut subscriber = server.connection();
    let mut pubsub = subscriber.as_pubsub();
    for owner in &owners[1..] {
        pubsub.subscribe(rlock_protocol::fair_waiter_channel(name.as_bytes(), owner.as_bytes())).unwrap();
    }
    assert_eq!(acquire(&mut con, &text, name, owners[0]), Value::Nil);
    for owner in &owners[1..] {
        assert!(matches!(acquire(&mut con, &text, name, owner), Value::Int(hint) if hint >= 1), "{owner} queues");
    }
    pubsub.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    for owner in &owners[1..] {
        let waited = Instant::now();
        let message = pubsub.get_message().unwrap_or_else(|err| panic!("{owner} never told its turn: {err}"));
        let channel = String::from_utf8(rlock_protocol::fair_waiter_channel(name.as_bytes(), owner.as_bytes()));
        assert_eq!(message.get_channel_name(), channel.unwrap(), "the head is told, in order");
        // Its turn comes at the lease's end, well before the 5 s wait it has.
        assert!(
            waited.elapsed() < Duration::from_millis(LEASE_MS + 1_500),
            "{owner} told late: {:?}",
            waited.elapsed()
        );
        assert_eq!(acquire(&mut con, &text, name, owner), Value::Nil, "{owner} takes its turn");
    }
    assert_eq!(family_native_count(&mut con, "fair"), 2 * owners.len() as i64 - 1);
}
