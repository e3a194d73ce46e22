use super::*;
use crate::keyspace::memory::{MemoryKeyspace as Keys, Value};

const NOW: i64 = 1_000_000;

type Key = (&'static str, Value, Option<i64>);

fn latch(count: &str) -> Vec<Key> {
    vec![("l", Keys::string(count), None)]
}

#[derive(Debug, Clone, Copy)]
enum Op {
    TrySetCount(i64),
    CountDown,
    Count,
    Delete,
}

#[derive(Debug, PartialEq)]
enum Reply {
    Bool(bool),
    Count(i64),
    Nothing,
}

fn run(op: Op, keys: &mut Keys) -> Result<Reply> {
    let latch = CountDownLatch::new(b"l");
    Ok(match op {
        Op::TrySetCount(count) => Reply::Bool(latch.try_set_count(keys, count)?),
        Op::CountDown => {
            latch.count_down(keys)?;
            Reply::Nothing
        }
        Op::Count => Reply::Count(latch.count(keys)?),
        Op::Delete => Reply::Bool(latch.delete(keys)?),
    })
}

struct Case {
    name: &'static str,
    keys: Vec<Key>,
    op: Op,
    reply: Result<Reply>,
    effects: &'static [&'static str],
    /// The count stored afterwards (`None`: missing).
    after: Option<&'static str>,
}

#[test]
fn operations_follow_redissons_scripts_and_their_fixes() {
    let cases = [
        Case {
            name: "trySetCount sets a missing latch and says so",
            keys: vec![],
            op: Op::TrySetCount(3),
            reply: Ok(Reply::Bool(true)),
            effects: &["SET l 3", "PUBLISH redisson_countdownlatch__channel__{l} 1"],
            after: Some("3"),
        },
        Case {
            name: "trySetCount leaves a set latch alone",
            keys: latch("2"),
            op: Op::TrySetCount(3),
            reply: Ok(Reply::Bool(false)),
            effects: &[],
            after: Some("2"),
        },
        Case {
            name: "countDown above 1 decrements",
            keys: latch("3"),
            op: Op::CountDown,
            reply: Ok(Reply::Nothing),
            effects: &["INCRBY l -1"],
            after: Some("2"),
        },
        Case {
            name: "countDown to 0 deletes and opens",
            keys: latch("1"),
            op: Op::CountDown,
            reply: Ok(Reply::Nothing),
            effects: &["DEL l", "PUBLISH redisson_countdownlatch__channel__{l} 0"],
            after: None,
        },
        Case {
            name: "countDown below 0 deletes without a message",
            keys: latch("0"),
            op: Op::CountDown,
            reply: Ok(Reply::Nothing),
            effects: &["DEL l"],
            after: None,
        },
        Case {
            name: "countDown of a missing latch writes nothing (Redisson creates -1 and deletes it)",
            keys: vec![],
            op: Op::CountDown,
            reply: Ok(Reply::Nothing),
            effects: &[],
            after: None,
        },
        Case {
            name: "count",
            keys: latch("4"),
            op: Op::Count,
            reply: Ok(Reply::Count(4)),
            effects: &[],
            after: Some("4"),
        },
        Case {
            name: "count of a missing latch",
            keys: vec![],
            op: Op::Count,
            reply: Ok(Reply::Count(0)),
            effects: &[],
            after: None,
        },
        Case {
            name: "delete removes the latch and opens it (Redisson publishes 1)",
            keys: latch("4"),
            op: Op::Delete,
            reply: Ok(Reply::Bool(true)),
            effects: &["DEL l", "PUBLISH redisson_countdownlatch__channel__{l} 0"],
            after: None,
        },
        Case {
            name: "delete of a missing latch",
            keys: vec![],
            op: Op::Delete,
            reply: Ok(Reply::Bool(false)),
            effects: &[],
            after: None,
        },
        Case {
            name: "a count at the bottom of the 64-bit range is refused",
            keys: latch("-9223372036854775808"),
            op: Op::CountDown,
            reply: Err(LockError::CounterOverflow(b"l".to_vec())),
            effects: &[],
            after: Some("-9223372036854775808"),
        },
    ];
    for case in cases {
        let mut keys = Keys::at(case.keys, NOW);
        assert_eq!(run(case.op, &mut keys), case.reply, "{}: reply", case.name);
        assert_eq!(keys.effects, case.effects, "{}: effects", case.name);
        let after = keys.keys.get(b"l".as_slice()).map(|(value, _)| value.clone());
        assert_eq!(after, case.after.map(Keys::string), "{}: value", case.name);
    }
}

#[test]
fn a_key_that_is_not_a_latch_is_refused_by_every_operation() {
    for op in [Op::TrySetCount(1), Op::CountDown, Op::Count, Op::Delete] {
        for (stored, error) in [
            (Keys::string("x"), LockError::StoredNotInteger(b"l".to_vec())),
            (Keys::string("+1"), LockError::StoredNotInteger(b"l".to_vec())),
            (Keys::list(&["1"]), LockError::WrongType),
        ] {
            let mut keys = Keys::at(vec![("l", stored.clone(), None)], NOW);
            let before = keys.keys.clone();
            assert_eq!(run(op, &mut keys), Err(error), "{op:?} on {stored:?}");
            assert!(keys.effects.is_empty() && keys.keys == before, "{op:?} on {stored:?} changed something");
        }
    }
}

#[test]
fn the_channel_always_gets_braces() {
    let mut keys = Keys::default();
    CountDownLatch::new(b"a{b}").try_set_count(&mut keys, 1).unwrap();
    assert_eq!(keys.effects, ["SET a{b} 1", "PUBLISH redisson_countdownlatch__channel__{a{b}} 1"]);
}

#[test]
fn a_named_channel_must_be_the_latchs_own() {
    let table: [(&[u8], &[u8], bool); 6] = [
        (b"l", b"redisson_countdownlatch__channel__{l}", true),
        (b"a{b}", b"redisson_countdownlatch__channel__{a{b}}", true),
        (b"l", b"redisson_countdownlatch__channel__{m}", false),
        (b"l", b"redisson_countdownlatch__channel__l", false),
        (b"l", b"redisson_countdownlatch__channel__{l}x", false),
        (b"l", b"", false),
    ];
    for (name, channel, ours) in table {
        let latch = CountDownLatch::on_channel(name, channel);
        assert_eq!(latch.is_some(), ours, "{channel:?} for {name:?}");
        let Some(latch) = latch else { continue };
        let mut keys = Keys::default();
        latch.try_set_count(&mut keys, 1).unwrap();
        let published = format!("PUBLISH {} 1", String::from_utf8_lossy(channel));
        assert_eq!(keys.effects[1], published);
    }
}

#[test]
fn like_redissons_scripts_it_sees_any_key_counts_a_missing_latch_down_and_deletes_with_1() {
    let other = || vec![("l", Keys::list(&["1"]), None)];
    // What, on which keys, the reply, the effects and the value after.
    type ScriptCase = (&'static str, Vec<Key>, Op, Reply, &'static [&'static str], Option<Value>);
    let cases: [ScriptCase; 6] = [
        (
            "countDown of a missing latch: DECR to -1, DEL",
            vec![],
            Op::CountDown,
            Reply::Nothing,
            &["INCRBY l -1", "DEL l"],
            None,
        ),
        ("trySetCount: any key exists", other(), Op::TrySetCount(3), Reply::Bool(false), &[], Some(Keys::list(&["1"]))),
        (
            "trySetCount: any string exists",
            latch("x"),
            Op::TrySetCount(3),
            Reply::Bool(false),
            &[],
            Some(Keys::string("x")),
        ),
        (
            "delete: any key, and 1 is published",
            other(),
            Op::Delete,
            Reply::Bool(true),
            &["DEL l", "PUBLISH redisson_countdownlatch__channel__{l} 1"],
            None,
        ),
        (
            "delete of a latch publishes 1",
            latch("4"),
            Op::Delete,
            Reply::Bool(true),
            &["DEL l", "PUBLISH redisson_countdownlatch__channel__{l} 1"],
            None,
        ),
        (
            "countDown to 0 as without",
            latch("1"),
            Op::CountDown,
            Reply::Nothing,
            &["DEL l", "PUBLISH redisson_countdownlatch__channel__{l} 0"],
            None,
        ),
    ];
    for (name, stored, op, reply, effects, after) in cases {
        let mut keys = Keys::at(stored, NOW);
        let latch = CountDownLatch::new(b"l").like_redissons_scripts();
        let answer = match op {
            Op::TrySetCount(count) => Reply::Bool(latch.try_set_count(&mut keys, count).unwrap()),
            Op::CountDown => {
                latch.count_down(&mut keys).unwrap();
                Reply::Nothing
            }
            Op::Delete => Reply::Bool(latch.delete(&mut keys).unwrap()),
            Op::Count => unreachable!("not a script of these"),
        };
        assert_eq!(answer, reply, "{name}: reply");
        assert_eq!(keys.effects, effects, "{name}: effects");
        assert_eq!(keys.keys.get(b"l".as_slice()).map(|(value, _)| value.clone()), after, "{name}: value");
    }
}
