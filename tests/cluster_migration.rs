//! A lock's slot moved to another primary while callers wait on the
//! server (`redis-cli --cluster reshard`'s steps). `MIGRATE` deletes the
//! keys on the node they leave; the module must not take that for a
//! release and grant the lock there while the target holds it. Its
//! blocked callers are told `TRYAGAIN` instead, and ask again where the
//! keys are now.

use redis::{Connection, Value};
use std::thread;
use std::time::Duration;
mod migration_support;

use migration_support::{Kind, LEASE};
use testkit::redisson_lock;
use testkit::UNLOCK_MESSAGE;
use testkit::{error_text, eventually, info_field, release_channel, rlock_info, server_time_ms, Cluster, PATIENCE};

const KINDS: [Kind; 3] = [Kind::lock("lock"), Kind::write("rw"), Kind::fair("fair")];

fn keys_in_slot(con: &mut Connection, slot: i64) -> i64 {
    redis::cmd("CLUSTER").arg("COUNTKEYSINSLOT").arg(slot).query(con).unwrap()
}

/// `kind`'s lock held by `holder` on the node serving it, and `waiter`
/// blocked on it there: the holder's connection, and the waiter's call.
fn held_with_a_blocked_waiter(cluster: &Cluster, kind: &Kind) -> (Connection, Waiting) {
    let source = cluster.primary_for(kind.name.as_bytes());
    let mut holder = source.connection();
    let granted: Value = kind.ask("holder").query(&mut holder).unwrap();
    assert_eq!(granted, Value::Nil, "{}: the holder's grant", kind.name);
    let mut waiter_con = source.connection();
    let wait = kind.wait("waiter");
    let waiter = thread::spawn(move || wait.query::<Value>(&mut waiter_con));
    eventually("the waiter blocked", PATIENCE, || {
        info_field(&mut holder, "clients", "blocked_clients").as_deref() == Some("1")
    });
    (holder, waiter)
}

type Waiting = thread::JoinHandle<redis::RedisResult<Value>>;

const FAIR: &Kind = &KINDS[2];

#[test]
fn a_lock_migrated_away_is_granted_to_no_waiter_on_the_node_it_left() {
    let cluster = Cluster::start(3, 0);
    for kind in &KINDS {
        let name = kind.name;
        let (mut holder, waiter) = held_with_a_blocked_waiter(&cluster, kind);

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
        let refused: Value = kind.ask("waiter").query(&mut target).unwrap();
        assert_ne!(refused, Value::Nil, "{name}: the holder still holds it on the target");
    }
}

/// `redis-cli --cluster reshard` moves a slot's keys in batches of ten
/// (`--cluster-pipeline`): a fair lock's three keys may leave in different
/// batches. While the lock's own key is still on the source, a look at its
/// queue there (here after a renewal's `expire` event) must not write the
/// keys that already left: the target holds them, and the next `MIGRATE`
/// fails `BUSYKEY`.
#[test]
fn a_fair_lock_half_migrated_gets_no_key_rewritten_on_the_node_it_is_leaving() {
    let cluster = Cluster::start(3, 0);
    let name = FAIR.name;
    let timeouts = format!("redisson_lock_timeout:{{{name}}}");
    let (mut holder, waiter) = held_with_a_blocked_waiter(&cluster, FAIR);

    let slot: i64 = redis::cmd("CLUSTER").arg("KEYSLOT").arg(name).query(&mut holder).unwrap();
    let mut slot_move = cluster.begin_move(slot);
    // The first batch: the deadlines only.
    slot_move.migrate(&[&timeouts]);
    // The holder's watchdog renews (an `expire` event: the server looks at the queue).
    let renewed: i64 = redis::cmd("RFAIR.RENEW").arg(name).arg("holder").arg(LEASE).query(&mut holder).unwrap();
    assert_eq!(renewed, 1, "renewed");
    // Nothing to wait for but the look's timer (0 ms) running meanwhile.
    thread::sleep(Duration::from_millis(500));
    let rewritten: i64 = redis::cmd("EXISTS").arg(&timeouts).query(&mut slot_move.source).unwrap_or(0);
    assert_eq!(rewritten, 0, "the source wrote {timeouts} again, which the target holds");
    slot_move.move_keys();
    let reply = waiter.join().unwrap();
    assert!(error_text(reply).starts_with("TRYAGAIN"), "the waiter asks again where the keys go");
}

/// A cluster that goes down moves nothing: the module ends no wait as if
/// the lock had left. A caller Redis 7.0 itself answers `CLUSTERDOWN` (it
/// unblocks callers blocked on a module when the cluster fails) gives its
/// place in a fair queue up once the cluster is back (giving it up may
/// grant), as one that disconnects does; where the call stays blocked
/// (Valkey 8.1), it is granted once the cluster is back.
#[test]
fn a_fair_waiter_through_a_cluster_down_leaves_the_queue_or_is_granted_after() {
    let cluster = Cluster::start_with(3, 0, |node| node.config("cluster-node-timeout", "2000"));
    let name = FAIR.name;
    let source = cluster.primary_for(name.as_bytes()).port();
    let (mut holder, waiter) = held_with_a_blocked_waiter(&cluster, FAIR);

    let other = cluster.nodes.iter().map(|node| node.port()).find(|port| *port != source).unwrap();
    cluster.node(other).pause();
    let state = |con: &mut Connection| redis::cmd("CLUSTER").arg("INFO").query::<String>(con).unwrap();
    eventually("the cluster down", Duration::from_secs(20), || state(&mut holder).contains("cluster_state:fail"));
    cluster.node(other).resume();
    cluster.wait_until_healthy(3);
    if waiter.is_finished() {
        let queue = format!("redisson_lock_queue:{{{name}}}");
        let queued = |con: &mut Connection| redis::cmd("LRANGE").arg(&queue).arg(0).arg(-1).query::<Vec<String>>(con);
        eventually("the place given up", PATIENCE, || queued(&mut holder).unwrap().is_empty());
    }

    let released: Value = FAIR.release("holder").query(&mut holder).unwrap();
    assert_eq!(released, Value::Int(1), "released");
    match waiter.join().unwrap() {
        Err(err) => {
            assert_eq!(err.code(), Some("CLUSTERDOWN"), "{err}");
            let third: Value = FAIR.ask("third").query(&mut holder).unwrap();
            assert_eq!(third, Value::Nil, "a free lock with nobody waiting any more");
        }
        Ok(reply) => assert_eq!(reply, Value::Nil, "the blocked waiter granted once the cluster is back"),
    }
}

/// While the cluster is down nothing is granted, even where Redis still
/// answers reads (`cluster-allow-reads-when-down yes`, so the check that
/// a lock's keys are served here passes): neither a lock whose lease ran
/// out, nor a fair lock whose lease ran out and whose head waiter left.
/// The slot may be failing over to another node. Once the cluster is
/// back, both are granted. Redis 7.0 answers callers blocked on a module
/// `CLUSTERDOWN` itself when the cluster fails; Valkey 8.1 keeps them
/// blocked.
#[test]
fn a_cluster_down_grants_nothing_until_it_is_back() {
    let cluster = Cluster::start_with(3, 0, |node| {
        node.config("cluster-node-timeout", "2000").config("cluster-allow-reads-when-down", "yes")
    });
    const LEASE_MS: i64 = 6_000;
    let (lock, fair) = ("{t}lock", "{t}fair");
    let source = cluster.primary_for(lock.as_bytes());
    let mut con = source.connection();
    let lease_ends = server_time_ms(&mut con) + LEASE_MS;
    for command in ["RLOCK.ACQUIRE", "RFAIR.ACQUIRE"] {
        let name = if command == "RLOCK.ACQUIRE" { lock } else { fair };
        let held: Value = redis::cmd(command).arg(name).arg("holder").arg(LEASE_MS).query(&mut con).unwrap();
        assert_eq!(held, Value::Nil, "{name} held");
    }
    let mut blocked = |wait: redis::Cmd, count: i64| {
        let mut waiter = source.connection();
        let id: i64 = redis::cmd("CLIENT").arg("ID").query(&mut waiter).unwrap();
        let call = thread::spawn(move || wait.query::<Value>(&mut waiter));
        eventually("a waiter blocked", PATIENCE, || {
            info_field(&mut con, "clients", "blocked_clients") == Some(count.to_string())
        });
        (id, call)
    };
    let (_, lock_waiter) = blocked(Kind::lock(lock).wait("waiter"), 1);
    let (head_id, head) = blocked(Kind::fair(fair).wait("head"), 2);
    let (_, next) = blocked(Kind::fair(fair).wait("next"), 3);

    let other = cluster.nodes.iter().map(|node| node.port()).find(|port| *port != source.port()).unwrap();
    cluster.node(other).pause();
    let mut con = source.connection();
    let state = |con: &mut Connection| redis::cmd("CLUSTER").arg("INFO").query::<String>(con).unwrap();
    eventually("the cluster down", Duration::from_secs(20), || state(&mut con).contains("cluster_state:fail"));
    eventually("the leases' end", Duration::from_secs(20), || server_time_ms(&mut con) > lease_ends + 100);
    let _: Value = redis::cmd("CLIENT").arg("KILL").arg("ID").arg(head_id).query(&mut con).unwrap();
    // Nothing to wait for but the module's timers (0 and 100 ms) running.
    thread::sleep(Duration::from_millis(500));
    let still_down = state(&mut con).contains("cluster_state:fail");
    let answered_while_down = [lock_waiter.is_finished(), next.is_finished()];
    cluster.node(other).resume();
    cluster.wait_until_healthy(3);
    assert!(still_down, "the cluster stayed down through the leases' end");
    let _ = head.join();
    for (call, answered_while_down) in [lock_waiter, next].into_iter().zip(answered_while_down) {
        match (call.join().unwrap(), answered_while_down) {
            (Err(err), true) => assert_eq!(err.code(), Some("CLUSTERDOWN"), "answered while down: {err}"),
            (Ok(reply), false) => assert_eq!(reply, Value::Nil, "granted once the cluster is back"),
            (reply, _) => panic!("answered {reply:?}, while the cluster was down: {answered_while_down}"),
        }
    }
}

/// The latched release of one level of `kind`, held twice by `holder`:
/// `RLOCK.RELEASE name holder LEASE ID again PX LEASE` (the mode after the
/// owner for a read-write lock).
fn latched_release(kind: &Kind) -> redis::Cmd {
    let mut release = kind.release("holder");
    if kind.name == "rw" {
        release.arg("WRITE");
    }
    release.arg(LEASE).arg("ID").arg("again").arg("PX").arg(LEASE);
    release
}

/// A release whose reply was lost is sent again with its request id;
/// a resharding tool may meanwhile have moved the lock's key and its
/// unlock latch (both in the lock's slot) in different `MIGRATE` batches.
/// The resend must never release a second level: wherever it runs it
/// either replays the latch or is told to ask again (as Redis tells
/// Redisson's unlock script, whose keys include the latch: `TRYAGAIN`).
#[test]
fn a_release_resent_while_its_latch_and_lock_are_on_two_nodes_drops_no_second_level() {
    each_kind_and_split_order(|kind, cluster, latch_first| {
        let name = kind.name;
        let mut holder = cluster.primary_for(name.as_bytes()).connection();
        held_twice(kind, &mut holder);
        let first: i64 = latched_release(kind).query(&mut holder).unwrap();
        assert_eq!(first, 0, "{name}: the first send released one level of two");

        let latch = format!("redisson_unlock_latch:{{{name}}}:again");
        let resend =
            Resend { request_key: ("the latch", &latch), request_key_first: latch_first, replay: Value::Int(0) };
        let held = resent_while_split(cluster, kind, resend, || latched_release(kind));
        assert_eq!(held, Some(1), "{name}: the level left after the resend");
    });
}

/// The twin of the release's: an acquire with a request id whose reply
/// was lost is sent again while the lock's key and its acquire record sit
/// on two nodes. The resend must never take a second level: it replays
/// the record or is told `TRYAGAIN`.
#[test]
fn an_acquire_resent_while_its_record_and_lock_are_on_two_nodes_takes_no_second_level() {
    each_kind_and_split_order(|kind, cluster, record_first| {
        let name = kind.name;
        let acquire = || {
            let mut acquire = kind.ask("holder");
            acquire.arg("ID").arg("again").arg("PX").arg(LEASE);
            acquire
        };
        let granted: Value = acquire().query(&mut cluster.primary_for(name.as_bytes()).connection()).unwrap();
        assert_eq!(granted, Value::Nil, "{name}: the first send's grant");

        let record = format!("rlock_acquire_record:{{{name}}}:again");
        let resend =
            Resend { request_key: ("the record", &record), request_key_first: record_first, replay: Value::Nil };
        let held = resent_while_split(cluster, kind, resend, acquire);
        assert_eq!(held, Some(1), "{name}: the levels after the resend");
    });
}

/// Redisson's own unlock, run natively: the filter makes its `EVALSHA`
/// (keys: the lock, its channel, its latch) an `RLOCK.RELEASE … ID`, whose
/// one declared key is the lock, so Redis's routing checks the lock only:
/// the latch is the command's to check. Its resend in a split slot must
/// release no second level either, as the script's would not.
#[test]
fn redissons_unlock_run_natively_and_resent_while_its_latch_and_lock_are_on_two_nodes_drops_no_second_level() {
    let scripts = redisson_lock::scripts(redisson_lock::VERSION);
    assert_eq!(scripts.unlock, redisson_lock::Unlock::Latch);
    let kind = &KINDS[0];
    let name = kind.name;
    let latch = format!("redisson_unlock_latch:{{{name}}}:again");
    let unlock = || {
        let mut unlock = redis::cmd("EVALSHA");
        unlock.arg(redisson_lock::sha1_hex(&scripts.release)).arg(3).arg(name).arg(release_channel(name.as_bytes()));
        unlock.arg(&latch).arg(UNLOCK_MESSAGE).arg(LEASE).arg("holder").arg("publish").arg(LEASE);
        unlock
    };
    let start = || Cluster::start_with(3, 0, |node| node.module_arg("redisson-scripts").module_arg("native"));
    each_split_order(start, |cluster, latch_first| {
        let native = || -> i64 {
            let nodes =
                cluster.urls().into_iter().map(|url| redis::Client::open(url).unwrap().get_connection().unwrap());
            nodes.map(|mut con| rlock_info(&mut con, "redisson_native_lock")).sum()
        };
        let mut holder = cluster.primary_for(name.as_bytes()).connection();
        held_twice(kind, &mut holder);
        let first: i64 = unlock().query(&mut holder).unwrap();
        assert_eq!(first, 0, "the first send released one level of two");
        let before = native();
        let resend =
            Resend { request_key: ("the latch", &latch), request_key_first: latch_first, replay: Value::Int(0) };
        let held = resent_while_split(cluster, kind, resend, unlock);
        assert_eq!(held, Some(1), "the level left after the resend");
        assert!(native() > before, "the resend ran natively");
    });
}

/// Runs `case` for each order a split slot's keys can move in (`true`:
/// the request's key first), each on a cluster of its own (`start`): on
/// Redis 8, a slot moved back and forth by `CLUSTER SETSLOT` sometimes went
/// back to a node of a higher config epoch that had let it go.
fn each_split_order(start: impl Fn() -> Cluster, mut case: impl FnMut(&Cluster, bool)) {
    for request_key_first in [false, true] {
        case(&start(), request_key_first);
    }
}

/// [`each_split_order`] for each kind of lock, on plain clusters.
fn each_kind_and_split_order(mut case: impl FnMut(&Kind, &Cluster, bool)) {
    for kind in &KINDS {
        each_split_order(|| Cluster::start(3, 0), |cluster, first| case(kind, cluster, first));
    }
}

/// `holder` takes `kind`'s lock twice (a re-entry).
fn held_twice(kind: &Kind, holder: &mut Connection) {
    for _ in 0..2 {
        let granted: Value = kind.ask("holder").query(holder).unwrap();
        assert_eq!(granted, Value::Nil, "{}: the holder's grant", kind.name);
    }
}

/// A request sent again while its slot's keys are split: which key
/// (`request_key`, the latch or record, named and spelled, or the lock)
/// moves first, and the reply the first send's (`replay`) that the resend
/// may give.
struct Resend<'a> {
    request_key: (&'static str, &'a str),
    request_key_first: bool,
    replay: Value,
}

/// Starts moving the slot of `kind`'s lock, `MIGRATE`s its key or its
/// request key alone, and sends `request` again where a client sends it
/// (the slot's owner), then where an `ASK` sends it on: it must replay
/// the first send's reply or be told `TRYAGAIN`. Then moves the rest and
/// gives the slot to the target: the holder's levels once the keys are
/// on one node (it holds one level, and still does after the resend).
/// The slot's keys are deleted after.
fn resent_while_split(
    cluster: &Cluster,
    kind: &Kind,
    Resend { request_key: (request_key_named, request_key), request_key_first, replay }: Resend,
    request: impl Fn() -> redis::Cmd,
) -> Option<i64> {
    let name = kind.name;
    let what = format!("{name}, {} moved first", if request_key_first { request_key_named } else { "the lock" });
    let mut source = cluster.primary_for(name.as_bytes()).connection();
    let slot: i64 = redis::cmd("CLUSTER").arg("KEYSLOT").arg(name).query(&mut source).unwrap();
    let mut slot_move = cluster.begin_move(slot);
    let moved = if request_key_first { request_key } else { name };
    slot_move.migrate(&[moved]);
    let resend = request().query::<Value>(&mut slot_move.source);
    let resend = match resend {
        Err(err) if err.code() == Some("ASK") => {
            let mut pipe = redis::pipe();
            pipe.cmd("ASKING").ignore().add_command(request());
            pipe.query::<(Value,)>(&mut slot_move.target).map(|(reply,)| reply)
        }
        other => other,
    };
    match resend {
        Ok(reply) => assert_eq!(reply, replay, "{what}: the resend's reply"),
        Err(err) => assert_eq!(err.code(), Some("TRYAGAIN"), "{what}: {err:?}"),
    }
    let field = if name == "rw" { "holder:write" } else { "holder" };
    let levels = |node: &mut Connection| -> Option<i64> {
        let _: () = redis::cmd("ASKING").query(node).unwrap();
        redis::cmd("HGET").arg(name).arg(field).query(node).unwrap()
    };
    let split = levels(if request_key_first { &mut slot_move.source } else { &mut slot_move.target });
    assert_eq!(split, Some(1), "{what}: the holder's levels after the resend");
    slot_move.move_keys();
    let held = levels(&mut slot_move.target);
    let target_port = slot_move.target_port;
    slot_move.finish(cluster);
    let mut target = cluster.node(target_port).connection();
    let slot_keys: Vec<String> =
        redis::cmd("CLUSTER").arg("GETKEYSINSLOT").arg(slot).arg(100).query(&mut target).unwrap();
    if !slot_keys.is_empty() {
        let _: i64 = redis::cmd("DEL").arg(&slot_keys).query(&mut target).unwrap();
    }
    held
}
