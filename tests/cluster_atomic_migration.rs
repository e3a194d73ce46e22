//! Valkey 9's atomic slot migration (`CLUSTER MIGRATESLOTS`) of a slot
//! holding locks, each held and with a caller blocked on it: the target
//! gets every key with its PTTL while the slot is still the source's, then
//! takes the slot at once, and the source drops the keys. The holder keeps
//! its lock on the target, the source grants nobody, and a release on the
//! target works. Servers without the command (Redis, Valkey before 9.0) skip.

use redis::{Connection, Value};
use std::thread;
use std::time::{Duration, Instant};
mod migration_support;

use migration_support::{Kind, WAIT};
use testkit::{eventually, has_atomic_slot_migration, server_bin, Cluster, Server, PATIENCE};

const KINDS: [Kind; 2] = [Kind::lock("{moved}lock"), Kind::fair("{moved}fair")];

fn blocked_clients(con: &mut Connection) -> i64 {
    testkit::info_field(con, "clients", "blocked_clients").and_then(|count| count.parse().ok()).unwrap_or(-1)
}

#[test]
fn an_atomic_slot_migration_keeps_held_locks_and_grants_nothing_on_the_node_left() {
    if !has_atomic_slot_migration(&mut Server::start().connection()) {
        eprintln!("skipped: {} has no CLUSTER MIGRATESLOTS (Valkey 9.0+)", server_bin());
        return;
    }
    let cluster = Cluster::start(3, 0);
    let source = cluster.primary_for(KINDS[0].name.as_bytes());
    let mut holder = source.connection();
    let waiters: Vec<_> = KINDS
        .iter()
        .enumerate()
        .map(|(at, kind)| {
            let granted: Value = kind.ask("holder").query(&mut holder).unwrap();
            assert_eq!(granted, Value::Nil, "{}: the holder's grant", kind.name);
            let mut waiter = source.connection();
            let wait = kind.wait("waiter");
            let call = thread::spawn(move || wait.query::<Value>(&mut waiter));
            eventually("the waiter blocked", PATIENCE, || blocked_clients(&mut holder) == at as i64 + 1);
            call
        })
        .collect();
    // Before the first PTTL read: a PTTL drops by the time from it to the last.
    let read_at = Instant::now();
    let pttls: Vec<i64> =
        KINDS.iter().map(|kind| redis::cmd("PTTL").arg(kind.name).query(&mut holder).unwrap()).collect();

    let slot: i64 = redis::cmd("CLUSTER").arg("KEYSLOT").arg(KINDS[0].name).query(&mut holder).unwrap();
    let mut target_con = cluster.node(cluster.migrate_slot_atomically(slot)).connection();

    for ((kind, waiter), pttl) in KINDS.iter().zip(waiters).zip(pttls) {
        let name = kind.name;
        // The source no longer serves the lock: its waiter is told to ask
        // elsewhere, at the latest when its wait runs out, never granted.
        eventually("the source's waiter answered", Duration::from_millis(WAIT as u64) + PATIENCE, || {
            waiter.is_finished()
        });
        let reply = waiter.join().unwrap();
        eprintln!("{name}: the source answered its waiter {reply:?}");
        assert!(!matches!(reply, Ok(Value::Nil)), "{name}: the source granted its waiter after the slot left");

        let held: Vec<String> = redis::cmd("HKEYS").arg(name).query(&mut target_con).unwrap();
        assert!(held.iter().any(|field| field.contains("holder")), "{name}: the target's holder: {held:?}");
        assert!(!held.iter().any(|field| field.contains("waiter")), "{name}: and no waiter's hold: {held:?}");
        let moved_pttl: i64 = redis::cmd("PTTL").arg(name).query(&mut target_con).unwrap();
        let elapsed_ms = i64::try_from(read_at.elapsed().as_millis()).unwrap() + 1;
        assert!(
            (pttl - elapsed_ms..=pttl).contains(&moved_pttl),
            "{name}: PTTL {moved_pttl}, {pttl} before the move, {elapsed_ms} ms ago"
        );

        let refused: Value = kind.ask("waiter").query(&mut target_con).unwrap();
        assert_ne!(refused, Value::Nil, "{name}: still the holder's on the target");
        let released: Value = kind.release("holder").query(&mut target_con).unwrap();
        assert_eq!(released, Value::Int(1), "{name}: released on the target");
        let granted: Value = kind.ask("waiter").query(&mut target_con).unwrap();
        assert_eq!(granted, Value::Nil, "{name}: free on the target");
    }
    let left: i64 = redis::cmd("CLUSTER").arg("COUNTKEYSINSLOT").arg(slot).query(&mut holder).unwrap();
    assert_eq!(left, 0, "the source dropped the slot's keys");
}
