//! A lock's slot moved to another primary while callers wait on the
//! server (`redis-cli --cluster reshard`'s steps). `MIGRATE` deletes the
//! keys on the node they leave; the module must not take that for a
//! release and grant the lock there while the target holds it. Its
//! blocked callers are told `TRYAGAIN` instead, and ask again where the
//! keys are now.

use redis::{Connection, Value};
use std::thread;
use std::time::Duration;
use testkit::{error_text, eventually, Cluster};

const LEASE: i64 = 60_000;
const WAIT: i64 = 20_000;

/// One kind: its lock's name, how an owner asks for it once, and how an
/// owner waits for it on the server.
struct Kind {
    name: &'static str,
    ask: fn(&str, &str) -> redis::Cmd,
    wait: fn(&str, &str) -> redis::Cmd,
}

const KINDS: [Kind; 3] = [
    Kind {
        name: "lock",
        ask: |name, owner| acquire("RLOCK.ACQUIRE", name, owner, &[]),
        wait: |name, owner| acquire("RLOCK.ACQUIRE", name, owner, &["WAIT", &WAIT.to_string()]),
    },
    Kind {
        name: "rw",
        ask: |name, owner| acquire("RRW.ACQUIRE", name, owner, &["WRITE"]),
        wait: |name, owner| acquire("RRW.ACQUIRE", name, owner, &["WRITE", "WAIT", &WAIT.to_string()]),
    },
    Kind {
        name: "fair",
        ask: |name, owner| acquire("RFAIR.ACQUIRE", name, owner, &[]),
        wait: |name, owner| {
            let wait = WAIT.to_string();
            acquire("RFAIR.ACQUIRE", name, owner, &["WAIT", &wait, "BLOCK", &wait])
        },
    },
];

/// `command name owner [before the lease…] lease [after…]`; a read-write
/// lock's mode comes before the lease, the waits after it.
fn acquire(command: &str, name: &str, owner: &str, args: &[&str]) -> redis::Cmd {
    let mut cmd = redis::cmd(command);
    cmd.arg(name).arg(owner);
    let (before, after) = match args.first() {
        Some(&"WRITE") => args.split_at(1),
        _ => args.split_at(0),
    };
    cmd.arg(before).arg(LEASE).arg(after);
    cmd
}

fn blocked_clients(con: &mut Connection) -> i64 {
    let info: String = redis::cmd("INFO").arg("clients").query(con).unwrap();
    let line = info.lines().find_map(|line| line.strip_prefix("blocked_clients:")).expect("blocked_clients");
    line.trim().parse().unwrap()
}

fn keys_in_slot(con: &mut Connection, slot: i64) -> i64 {
    redis::cmd("CLUSTER").arg("COUNTKEYSINSLOT").arg(slot).query(con).unwrap()
}

#[test]
fn a_lock_migrated_away_is_granted_to_no_waiter_on_the_node_it_left() {
    let cluster = Cluster::start(3, 0);
    for kind in &KINDS {
        let name = kind.name;
        let source = cluster.primary_for(name.as_bytes());
        let mut holder = source.connection();
        let granted: Value = (kind.ask)(name, "holder").query(&mut holder).unwrap();
        assert_eq!(granted, Value::Nil, "{name}: the holder's grant");
        let mut waiter_con = source.connection();
        let wait = (kind.wait)(name, "waiter");
        let waiter = thread::spawn(move || wait.query::<Value>(&mut waiter_con));
        eventually("the waiter blocked", Duration::from_secs(10), || blocked_clients(&mut holder) == 1);

        let slot: i64 = redis::cmd("CLUSTER").arg("KEYSLOT").arg(name).query(&mut holder).unwrap();
        let mut slot_move = cluster.begin_move(slot);
        slot_move.move_keys();
        let reply = waiter.join().unwrap();
        assert!(error_text(reply).starts_with("TRYAGAIN"), "{name}: the waiter on the node the lock left");
        assert_eq!(keys_in_slot(&mut slot_move.source, slot), 0, "{name}: no key granted on the node it left");
        let _: () = redis::cmd("ASKING").query(&mut slot_move.target).unwrap();
        let fields: Vec<String> = redis::cmd("HKEYS").arg(name).query(&mut slot_move.target).unwrap();
        let holders: Vec<&String> = fields.iter().filter(|field| field.contains("holder")).collect();
        assert!(!holders.is_empty(), "{name}: the target has the holder: {fields:?}");
        assert!(!fields.iter().any(|field| field.contains("waiter")), "{name}: and no waiter's hold: {fields:?}");

        let target_port = slot_move.target_port;
        slot_move.finish(&cluster);
        // Asked again where the keys are, the waiter is refused: held.
        let mut target = cluster.node(target_port).connection();
        let refused: Value = (kind.ask)(name, "waiter").query(&mut target).unwrap();
        assert_ne!(refused, Value::Nil, "{name}: the holder still holds it on the target");
    }
}
