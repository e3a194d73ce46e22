use super::*;
use crate::keyspace::memory::{MemoryKeyspace as Keys, Value};
use crate::redisson::lua_number::{percent_17g, LuaText};

/// The server's clock; the caller's runs 5 s behind it.
const NOW: i64 = 1_000_000;
const CALLER: i64 = NOW - 5_000;
const LEASE: i64 = 30_000;

fn lua_7_0(x: f64) -> LuaText {
    percent_17g(x)
}

struct Case {
    name: &'static str,
    hash: Option<Value>,
    ttl: Option<i64>,
    owner: &'static str,
    fields: &'static [&'static str],
    reply: Result<bool>,
    effects: &'static [&'static str],
}

/// `g` holds the group: fields a and b held by u:1 until 990000 and
/// 1100000 (its own clock), c by u:2.
fn group() -> Value {
    Keys::hash(&[
        ("a", "u:1"),
        ("a:u:1:expire_time", "990000"),
        ("a:u:1:lock_count", "1"),
        ("b", "u:1"),
        ("b:u:1:expire_time", "1100000"),
        ("b:u:1:lock_count", "2"),
        ("c", "u:2"),
        ("c:u:2:expire_time", "1010000"),
        ("c:u:2:lock_count", "1"),
    ])
}

#[test]
fn the_renewal_does_what_redissons_script_does() {
    let cases = [
        Case {
            name: "every field held: earlier ends pushed to the caller's now + lease, the TTL raised",
            hash: Some(group()),
            ttl: Some(NOW + 1_000),
            owner: "u:1",
            fields: &["a", "b"],
            reply: Ok(true),
            effects: &["HSET g a:u:1:expire_time 1025000", "PEXPIREAT g 1030000"],
        },
        Case {
            name: "a TTL above the lease is kept",
            hash: Some(group()),
            ttl: Some(NOW + 40_000),
            owner: "u:1",
            fields: &["a"],
            reply: Ok(true),
            effects: &["HSET g a:u:1:expire_time 1025000"],
        },
        Case {
            name: "a TTL equal to the lease is kept; an end already later is kept",
            hash: Some(group()),
            ttl: Some(NOW + LEASE),
            owner: "u:1",
            fields: &["b"],
            reply: Ok(true),
            effects: &[],
        },
        Case {
            name: "no TTL (PTTL -1) gets the lease",
            hash: Some(group()),
            ttl: None,
            owner: "u:1",
            fields: &["b"],
            reply: Ok(true),
            effects: &["PEXPIREAT g 1030000"],
        },
        Case {
            name: "a field of another owner: 0, the fields before it renewed all the same, no TTL",
            hash: Some(group()),
            ttl: Some(NOW + 1_000),
            owner: "u:1",
            fields: &["a", "c", "b"],
            reply: Ok(false),
            effects: &["HSET g a:u:1:expire_time 1025000"],
        },
        Case {
            name: "a free field: 0",
            hash: Some(group()),
            ttl: Some(NOW + 1_000),
            owner: "u:1",
            fields: &["z", "a"],
            reply: Ok(false),
            effects: &[],
        },
        Case {
            name: "a missing group: 0",
            hash: None,
            ttl: None,
            owner: "u:1",
            fields: &["a"],
            reply: Ok(false),
            effects: &[],
        },
        Case {
            name: "a field twice is renewed once",
            hash: Some(group()),
            ttl: Some(NOW + 1_000),
            owner: "u:1",
            fields: &["a", "a"],
            reply: Ok(true),
            effects: &["HSET g a:u:1:expire_time 1025000", "PEXPIREAT g 1030000"],
        },
        Case {
            name: "an end Lua reads as a number (spaces, hexadecimal, a fraction) is compared as Lua does",
            hash: Some(Keys::hash(&[
                ("a", "u:1"),
                ("a:u:1:expire_time", " 0x10 "),
                ("b", "u:1"),
                ("b:u:1:expire_time", "1024999.5"),
                ("c", "u:1"),
                ("c:u:1:expire_time", "1025000.5"),
            ])),
            ttl: Some(NOW + 1_000),
            owner: "u:1",
            fields: &["a", "b", "c"],
            reply: Ok(true),
            effects: &["HSET g a:u:1:expire_time 1025000", "HSET g b:u:1:expire_time 1025000", "PEXPIREAT g 1030000"],
        },
        Case {
            name: "a field that is itself the hold's end field reads the end just written",
            hash: Some(Keys::hash(&[("a", "u:1"), ("a:u:1:expire_time", "1")])),
            ttl: Some(NOW + 1_000),
            owner: "u:1",
            fields: &["a", "a:u:1:expire_time"],
            reply: Ok(false),
            effects: &["HSET g a:u:1:expire_time 1025000"],
        },
        Case {
            name: "a missing end fails as the script does, with nothing written",
            hash: Some(Keys::hash(&[("a", "u:1"), ("a:u:1:expire_time", "1"), ("b", "u:1")])),
            ttl: Some(NOW + 1_000),
            owner: "u:1",
            fields: &["a", "b"],
            reply: Err(LockError::HoldEndNotNumber(b"b:u:1:expire_time".to_vec())),
            effects: &[],
        },
        Case {
            name: "an end that is no number fails, with nothing written",
            hash: Some(Keys::hash(&[("a", "u:1"), ("a:u:1:expire_time", "soon")])),
            ttl: Some(NOW + 1_000),
            owner: "u:1",
            fields: &["a"],
            reply: Err(LockError::HoldEndNotNumber(b"a:u:1:expire_time".to_vec())),
            effects: &[],
        },
        Case {
            name: "a key of another type is refused",
            hash: Some(Keys::string("x")),
            ttl: None,
            owner: "u:1",
            fields: &["a"],
            reply: Err(LockError::WrongType),
            effects: &[],
        },
        Case {
            name: "with no field, any key's TTL is raised (the script's pexpire)",
            hash: Some(Keys::string("x")),
            ttl: None,
            owner: "u:1",
            fields: &[],
            reply: Ok(true),
            effects: &["PEXPIREAT g 1030000"],
        },
    ];
    for case in cases {
        let mut keys = Keys::at(case.hash.into_iter().map(|hash| ("g", hash, case.ttl)).collect(), NOW);
        let fields: Vec<&[u8]> = case.fields.iter().map(|field| field.as_bytes()).collect();
        let renewal = Renewal { owner: case.owner.as_bytes(), lease_ms: LEASE, now_ms: CALLER, fields: &fields };
        assert_eq!(renew(&mut keys, b"g", &renewal, NOW, lua_7_0), case.reply, "{}", case.name);
        assert_eq!(keys.effects, case.effects, "{}", case.name);
    }
}

#[test]
fn the_new_end_is_written_as_the_servers_lua_writes_the_number() {
    let huge = 1i64 << 60;
    let mut keys = Keys::at(vec![("g", Keys::hash(&[("a", "u:1"), ("a:u:1:expire_time", "0")]), None)], NOW);
    let renewal = Renewal { owner: b"u:1", lease_ms: LEASE, now_ms: huge, fields: &[b"a"] };
    assert_eq!(renew(&mut keys, b"g", &renewal, NOW, lua_7_0), Ok(true));
    assert_eq!(keys.effects[0], "HSET g a:u:1:expire_time 1.1529215046068769e+18");
}
