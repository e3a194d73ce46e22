//! RLOCK.RELEASE with a request id or a declared latch key (Redisson's
//! unlock latch): replies and effects, replays, bad input, ACL on the
//! derived and the declared key, cluster slots and keyspace notifications.

use redis::{Commands, Connection, RedisResult, Value};
use std::collections::HashMap;
use std::time::Duration;
use testkit::{error_text, keyspace_events, rlock_info, unlock_latch_key, RedissonScripts, Server};

fn run(con: &mut Connection, args: &[&[u8]]) -> RedisResult<Value> {
    redis::cmd(std::str::from_utf8(args[0]).unwrap()).arg(&args[1..]).query(con)
}

fn fields(con: &mut Connection, key: &[u8]) -> HashMap<Vec<u8>, Vec<u8>> {
    con.hgetall(key).unwrap()
}

fn latch(con: &mut Connection, name: &[u8], id: &[u8]) -> (Option<String>, i64) {
    let key = unlock_latch_key(name, id);
    (con.get(&key).unwrap(), con.pttl(&key).unwrap())
}

#[test]
fn a_repeated_release_replies_its_first_reply_and_changes_nothing() {
    let server = Server::shared();
    let mut con = server.connection();
    let counted =
        |con: &mut Connection| ["release_latched", "released", "released_reentry"].map(|name| rlock_info(con, name));
    let before = counted(&mut con);
    for _ in 0..2 {
        run(&mut con, &[b"RLOCK.ACQUIRE", b"res", b"a", b"60000"]).unwrap();
    }

    // One reentry level: 0, recorded with the default latch time.
    assert_eq!(run(&mut con, &[b"RLOCK.RELEASE", b"res", b"a", b"50000", b"ID", b"r1"]).unwrap(), Value::Int(0));
    let (value, pttl) = latch(&mut con, b"res", b"r1");
    assert_eq!(value.as_deref(), Some("0"));
    assert!(19_000 < pttl && pttl <= 20_000, "latch PTTL {pttl}");
    assert_eq!(run(&mut con, &[b"RLOCK.RELEASE", b"res", b"a", b"ID", b"r1"]).unwrap(), Value::Int(0));
    assert_eq!(
        fields(&mut con, b"res"),
        HashMap::from([(b"a".to_vec(), b"1".to_vec())]),
        "the replay released nothing"
    );

    // The last hold: 1, with keywords in any case and an explicit PX.
    assert_eq!(run(&mut con, &[b"RLOCK.RELEASE", b"res", b"a", b"id", b"r2", b"px", b"5000"]).unwrap(), Value::Int(1));
    let (value, pttl) = latch(&mut con, b"res", b"r2");
    assert_eq!(value.as_deref(), Some("1"));
    assert!(4_000 < pttl && pttl <= 5_000, "latch PTTL {pttl}");
    assert!(!con.exists::<_, bool>("res").unwrap(), "fully released");

    // Replayed after someone else took the lock: still 1, b's lock untouched.
    run(&mut con, &[b"RLOCK.ACQUIRE", b"res", b"b", b"60000"]).unwrap();
    let mut listener = server.connection();
    let mut pubsub = listener.as_pubsub();
    pubsub.subscribe(testkit::release_channel(b"res")).unwrap();
    assert_eq!(run(&mut con, &[b"RLOCK.RELEASE", b"res", b"a", b"ID", b"r2"]).unwrap(), Value::Int(1));
    assert_eq!(fields(&mut con, b"res"), HashMap::from([(b"b".to_vec(), b"1".to_vec())]));
    let _: () = con.publish(testkit::release_channel(b"res"), "marker").unwrap();
    pubsub.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let first: String = pubsub.get_message().unwrap().get_payload().unwrap();
    assert_eq!(first, "marker", "a replay publishes nothing");

    // Not held: nil, nothing recorded.
    assert_eq!(run(&mut con, &[b"RLOCK.RELEASE", b"res", b"a", b"ID", b"r3"]).unwrap(), Value::Nil);
    assert_eq!(latch(&mut con, b"res", b"r3"), (None, -2));

    // Binary request ids, and names with their own hash tag.
    run(&mut con, &[b"RLOCK.ACQUIRE", b"{t}x", b"a"]).unwrap();
    assert_eq!(run(&mut con, &[b"RLOCK.RELEASE", b"{t}x", b"a", b"ID", b"\x00\xff"]).unwrap(), Value::Int(1));
    let key: &[u8] = b"redisson_unlock_latch:{t}x:\x00\xff";
    assert_eq!(con.get::<_, String>(key).unwrap(), "1");

    let [latched, released, reentry] = counted(&mut con);
    assert_eq!(
        [latched - before[0], released - before[1], reentry - before[2]],
        [2, 2, 1],
        "latched, released, re-entry"
    );
}

#[test]
fn a_latch_key_holding_something_else_is_an_error_and_stays() {
    let server = Server::shared();
    let mut con = server.connection();
    run(&mut con, &[b"RLOCK.ACQUIRE", b"res", b"a", b"60000"]).unwrap();
    let _: () = con.set(unlock_latch_key(b"res", b"text"), "yes").unwrap();
    let _: () = con.hset(unlock_latch_key(b"res", b"hash"), "f", "1").unwrap();
    for id in [b"text".as_slice(), b"hash"] {
        let text = error_text(run(&mut con, &[b"RLOCK.RELEASE", b"res", b"a", b"ID", id]));
        assert_eq!(text, "ERR the unlock latch key holds something other than 0 or 1");
    }
    assert_eq!(con.get::<_, String>(unlock_latch_key(b"res", b"text")).unwrap(), "yes");
    assert_eq!(fields(&mut con, &unlock_latch_key(b"res", b"hash")).len(), 1);
    assert_eq!(fields(&mut con, b"res"), HashMap::from([(b"a".to_vec(), b"1".to_vec())]));
}

#[test]
fn bad_latch_arguments_are_refused_without_touching_anything() {
    let server = Server::shared();
    let mut con = server.connection();
    run(&mut con, &[b"RLOCK.ACQUIRE", b"res", b"a", b"60000"]).unwrap();
    run(&mut con, &[b"RLOCK.ACQUIRE", b"res", b"a", b"60000"]).unwrap();
    // A syntax error names the misfit, then quotes the command's syntax.
    macro_rules! syntax {
        ($misfit:literal) => {
            concat!(
                "ERR syntax error: ",
                $misfit,
                "; syntax: RLOCK.RELEASE key owner [lease_ms] [ID request_id | LATCH latch_key [PX latch_ms]] \
                 [VIA PUBLISH|SPUBLISH|NONE]"
            )
        };
    }
    const NOT_POSITIVE: &str = "ERR latch_ms must be a positive integer";
    let cases: [(&[&[u8]], &str); 21] = [
        (&[b"LATCH"], "ERR LATCH needs a non-empty latch_key"),
        (&[b"1000", b"LATCH", b""], "ERR LATCH needs a non-empty latch_key"),
        (&[b"LATCH", b"res"], "ERR LATCH latch_key must be another key than the lock's"),
        (&[b"ID", b"latch"], "ERR request_id may not be the word LATCH"),
        // Redis's keyword search reads it up to the NUL: LATCH, too.
        (&[b"1000", b"ID", b"LATCH\0r", b"PX", b"5"], "ERR request_id may not be the word LATCH"),
        (&[b"LATCH", b"l", b"ID", b"r"], syntax!("unexpected argument 5 ('ID')")),
        (&[b"LATCH", b"l", b"PX", b"0"], NOT_POSITIVE),
        (&[b"ID"], "ERR ID needs a non-empty request_id"),
        (&[b"1000", b"ID"], "ERR ID needs a non-empty request_id"),
        (&[b"ID", b""], "ERR ID needs a non-empty request_id"),
        (&[b"ID", b"r", b"PX"], "ERR PX needs latch_ms"),
        (&[b"ID", b"r", b"PX", b"0"], NOT_POSITIVE),
        (&[b"ID", b"r", b"PX", b"-1"], NOT_POSITIVE),
        (&[b"ID", b"r", b"PX", b"1.5"], NOT_POSITIVE),
        (&[b"ID", b"r", b"PX", b"31536000001"], "ERR latch_ms is above the maximum of 31536000000 (365 days)"),
        (&[b"ID", b"r", b"EX", b"5"], syntax!("unexpected argument 5 ('EX')")),
        (&[b"ID", b"r", b"PX", b"5", b"extra"], syntax!("unexpected argument 7 ('extra')")),
        (&[b"1000", b"FOO", b"r"], syntax!("unexpected argument 4 ('FOO')")),
        (&[b"1000", b"ID", b"r", b"ID", b"s"], syntax!("unexpected argument 6 ('ID')")),
        (&[b"-1", b"ID", b"r"], "ERR lease_ms must be a positive integer"),
        (&[b"PX", b"5"], syntax!("unexpected argument 3 ('PX')")),
    ];
    let dump = |con: &mut Connection| -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
        let mut keys: Vec<Vec<u8>> = con.keys("*").unwrap();
        keys.sort();
        keys.into_iter().map(|k| (k.clone(), redis::cmd("DUMP").arg(&k).query(con).unwrap())).collect()
    };
    let before = dump(&mut con);
    for (tail, expected) in cases {
        let args: Vec<&[u8]> = [&[b"RLOCK.RELEASE".as_slice(), b"res", b"a"][..], tail].concat();
        assert_eq!(error_text(run(&mut con, &args)), expected, "{tail:?}");
        assert_eq!(dump(&mut con), before, "{tail:?} changed something");
    }
}

#[test]
fn the_latch_key_is_checked_against_the_callers_acl() {
    let server = Server::shared();
    let mut admin = server.connection();
    let mut limited = server.login("limited", &["~locks:*"]);
    run(&mut limited, &[b"RLOCK.ACQUIRE", b"locks:a", b"o", b"60000"]).unwrap();
    let text = error_text(run(&mut limited, &[b"RLOCK.RELEASE", b"locks:a", b"o", b"ID", b"r"]));
    assert!(text.starts_with("NOPERM") && text.contains("'redisson_unlock_latch:{locks:a}:r'"), "{text}");
    assert_eq!(fields(&mut limited, b"locks:a"), HashMap::from([(b"o".to_vec(), b"1".to_vec())]), "nothing released");
    let exists: bool = admin.exists(unlock_latch_key(b"locks:a", b"r")).unwrap();
    assert!(!exists, "no latch written");
    // Without an id, the user may release as before.
    assert_eq!(run(&mut limited, &[b"RLOCK.RELEASE", b"locks:a", b"o"]).unwrap(), Value::Int(1));

    for keys in [&["~*"][..], &["~locks:*", "~redisson_unlock_latch:*"]] {
        let mut allowed = server.login("allowed", keys);
        run(&mut allowed, &[b"RLOCK.ACQUIRE", b"locks:b", b"o"]).unwrap();
        assert_eq!(
            run(&mut allowed, &[b"RLOCK.RELEASE", b"locks:b", b"o", b"ID", b"r"]).unwrap(),
            Value::Int(1),
            "{keys:?}"
        );
        assert_eq!(latch(&mut admin, b"locks:b", b"r").0.as_deref(), Some("1"), "{keys:?}");
        let _: () = admin.del(unlock_latch_key(b"locks:b", b"r")).unwrap();
    }
}

#[test]
fn in_cluster_mode_a_latch_key_in_another_slot_is_refused() {
    let (_server, mut con) = Server::single_node_cluster();
    // "a{b" has no proper hash tag: its latch key hashes elsewhere.
    run(&mut con, &[b"RLOCK.ACQUIRE", b"a{b", b"o"]).unwrap();
    let text = error_text(run(&mut con, &[b"RLOCK.RELEASE", b"a{b", b"o", b"ID", b"r"]));
    assert_eq!(text, "ERR the unlock latch key hashes to another slot than the lock: give the lock name a hash tag");
    assert_eq!(fields(&mut con, b"a{b"), HashMap::from([(b"o".to_vec(), b"1".to_vec())]), "nothing released");
    // The families' releases too: refused for good, never TRYAGAIN (a
    // client would ask again and again).
    for release in [
        &[b"RRW.RELEASE".as_slice(), b"a{b", b"o", b"WRITE", b"ID", b"r"][..],
        &[b"RFAIR.RELEASE", b"a{b", b"o", b"ID", b"r"],
    ] {
        let text = error_text(run(&mut con, release));
        assert!(text.starts_with("ERR ") && text.contains("another slot"), "{}: {text}", release[0].escape_ascii());
    }
    for name in [b"plain".as_slice(), b"{tag}x"] {
        run(&mut con, &[b"RLOCK.ACQUIRE", name, b"o"]).unwrap();
        assert_eq!(run(&mut con, &[b"RLOCK.RELEASE", name, b"o", b"ID", b"r"]).unwrap(), Value::Int(1));
    }
}

/// `LATCH latch_key` is the latch `ID` derives, named: the same replies,
/// the same key and replays across the two forms; any other key serves
/// too, as Redisson's script writes whatever key it is given.
#[test]
fn a_declared_latch_key_is_the_latch_its_request_id_names() {
    let server = Server::shared();
    let mut con = server.connection();
    for _ in 0..2 {
        run(&mut con, &[b"RLOCK.ACQUIRE", b"decl", b"a", b"60000"]).unwrap();
    }
    let key = unlock_latch_key(b"decl", b"r1");
    assert_eq!(
        run(&mut con, &[b"RLOCK.RELEASE", b"decl", b"a", b"LATCH", &key, b"PX", b"5000"]).unwrap(),
        Value::Int(0)
    );
    let (value, pttl) = latch(&mut con, b"decl", b"r1");
    assert_eq!(value.as_deref(), Some("0"));
    assert!(4_000 < pttl && pttl <= 5_000, "latch PTTL {pttl}");
    // Replayed by either form: 0 again, nothing released.
    assert_eq!(run(&mut con, &[b"RLOCK.RELEASE", b"decl", b"a", b"ID", b"r1"]).unwrap(), Value::Int(0));
    assert_eq!(run(&mut con, &[b"RLOCK.RELEASE", b"decl", b"a", b"latch", &key]).unwrap(), Value::Int(0));
    assert_eq!(fields(&mut con, b"decl"), HashMap::from([(b"a".to_vec(), b"1".to_vec())]));
    // Any key, with the default latch time; the owner may be named LATCH.
    assert_eq!(run(&mut con, &[b"RLOCK.RELEASE", b"decl", b"a", b"LATCH", b"my-latch"]).unwrap(), Value::Int(1));
    assert_eq!(con.get::<_, String>("my-latch").unwrap(), "1");
    let pttl: i64 = con.pttl("my-latch").unwrap();
    assert!(19_000 < pttl && pttl <= 20_000, "latch PTTL {pttl}");
    run(&mut con, &[b"RLOCK.ACQUIRE", b"decl", b"LATCH", b"60000"]).unwrap();
    assert_eq!(
        run(&mut con, &[b"RLOCK.RELEASE", b"decl", b"LATCH", b"LATCH", b"owners-latch"]).unwrap(),
        Value::Int(1)
    );
    // Redis is told the keys: the lock's, and the latch after LATCH only.
    for (call, keys) in [
        (&[b"RLOCK.RELEASE".as_slice(), b"l", b"LATCH", b"LATCH", b"k", b"PX", b"5"][..], &[b"l".as_slice(), b"k"][..]),
        (&[b"RLOCK.RELEASE", b"l", b"o", b"ID", b"r", b"VIA", b"NONE"], &[b"l"]),
    ] {
        let found: Vec<Vec<u8>> = redis::cmd("COMMAND").arg("GETKEYS").arg(call).query(&mut con).unwrap();
        assert_eq!(found, keys, "{call:?}");
    }
}

/// A declared latch key is checked as a key in argv: the caller's ACL by
/// Redis, the slot (Redis 7.0 routes by the first key) by the module, with
/// Redis's reply; refused, nothing is released or written.
#[test]
fn a_declared_latch_key_is_checked_by_redis() {
    let server = Server::shared();
    let mut admin = server.connection();
    let mut limited = server.login("declared", &["~locks:*"]);
    run(&mut limited, &[b"RLOCK.ACQUIRE", b"locks:d", b"o", b"60000"]).unwrap();
    let text = error_text(run(&mut limited, &[b"RLOCK.RELEASE", b"locks:d", b"o", b"LATCH", b"elsewhere"]));
    // Redis's own refusal (Redis 7.0's text; "No permissions to access a key" on Valkey, Redis 8).
    assert!(text.starts_with("NOPERM") && !text.contains("latch"), "{text}");
    assert_eq!(fields(&mut admin, b"locks:d"), HashMap::from([(b"o".to_vec(), b"1".to_vec())]), "nothing released");
    assert!(!admin.exists::<_, bool>("elsewhere").unwrap(), "no latch written");
    assert_eq!(
        run(&mut limited, &[b"RLOCK.RELEASE", b"locks:d", b"o", b"LATCH", b"locks:latch"]).unwrap(),
        Value::Int(1)
    );

    let (_cluster, mut con) = Server::single_node_cluster();
    run(&mut con, &[b"RLOCK.ACQUIRE", b"{t}l", b"o"]).unwrap();
    let text = error_text(run(&mut con, &[b"RLOCK.RELEASE", b"{t}l", b"o", b"LATCH", b"{u}latch"]));
    assert!(text.starts_with("CROSSSLOT"), "{text}");
    assert_eq!(fields(&mut con, b"{t}l"), HashMap::from([(b"o".to_vec(), b"1".to_vec())]), "nothing released");
    assert_eq!(run(&mut con, &[b"RLOCK.RELEASE", b"{t}l", b"o", b"LATCH", b"{t}latch"]).unwrap(), Value::Int(1));
}

/// The latch key gets the events Redis's own `SET L v PX n` sends (`set`,
/// then `expire`), like the script's; replays send none.
#[test]
fn latch_notifications_match_the_script() {
    let server = Server::builder().config("notify-keyspace-events", "KEA").start();
    let scripts = RedissonScripts::default();
    let mut replies: HashMap<&str, Vec<Value>> = HashMap::new();
    let all = keyspace_events(&server, |con| {
        scripts.load(con).unwrap();
        for (side, name) in [("script", b"s:lock".as_slice()), ("command", b"c:lock"), ("declared", b"d:lock")] {
            for _ in 0..2 {
                run(con, &[b"RLOCK.ACQUIRE", name, b"a"]).unwrap();
            }
            for id in [b"r1".as_slice(), b"r1", b"r2", b"r2", b"r3"] {
                let reply: Value = match side {
                    "script" => scripts.release_latched(name, b"a", 30_000, id, 20_000).query(con).unwrap(),
                    "declared" => {
                        let key = unlock_latch_key(name, id);
                        run(con, &[b"RLOCK.RELEASE", name, b"a", b"30000", b"LATCH", &key, b"PX", b"20000"]).unwrap()
                    }
                    _ => run(con, &[b"RLOCK.RELEASE", name, b"a", b"30000", b"ID", id, b"PX", b"20000"]).unwrap(),
                };
                replies.entry(side).or_default().push(reply);
            }
        }
    });
    let expected = [Value::Int(0), Value::Int(0), Value::Int(1), Value::Int(1), Value::Nil];
    for side in ["script", "command", "declared"] {
        assert_eq!(replies[side], expected, "{side}");
    }
    let mut events: HashMap<String, Vec<String>> = HashMap::new();
    for (key, event) in all {
        let side = ["script", "command", "declared"]
            .into_iter()
            .find(|side| key.contains(&format!("{}:lock", &side[..1])))
            .unwrap();
        let what = if key.contains("redisson_unlock_latch") { "latch" } else { "lock" };
        events.entry(format!("{side} {what}")).or_default().push(event);
    }
    assert_eq!(events["script latch"], ["set", "expire", "set", "expire"], "the script's own events");
    assert_eq!(events["command latch"], events["script latch"]);
    assert_eq!(events["command lock"], events["script lock"], "the lock key's events");
    assert_eq!(events["declared latch"], events["script latch"]);
    assert_eq!(events["declared lock"], events["script lock"]);
}
