use super::*;
use redis::Value::{Array, BulkString, Int, Map, Nil, Okay};

fn id(kind: Kind) -> LockId {
    LockId { name: b"orders".as_slice().into(), owner: b"u:1".as_slice().into(), kind }
}

fn args(cmd: &Cmd) -> Vec<String> {
    cmd.args_iter()
        .map(|arg| match arg {
            redis::Arg::Simple(bytes) => String::from_utf8_lossy(bytes).into_owned(),
            _ => "<cursor>".into(),
        })
        .collect()
}

#[test]
fn each_kind_sends_its_commands() {
    let latch = Some((Latch::Request(b"r1"), Duration::from_millis(5000)));
    let latch_key = Some((Latch::Key(b"redisson_unlock_latch:{orders}:r1"), Duration::from_millis(5000)));
    let cases: [(Cmd, &str); 21] = [
        (id(Kind::Plain).acquire(100, Some(7)), "RLOCK.ACQUIRE orders u:1 100"),
        (id(Kind::Fair).acquire(100, Some(7)), "RFAIR.ACQUIRE orders u:1 100 WAIT 7"),
        (id(Kind::Fair).acquire(100, None), "RFAIR.ACQUIRE orders u:1 100"),
        (id(Kind::Read).acquire(100, Some(7)), "RRW.ACQUIRE orders u:1 READ 100"),
        (id(Kind::Write).acquire(100, None), "RRW.ACQUIRE orders u:1 WRITE 100"),
        (
            id(Kind::Plain).release(100, latch_key, true),
            "RLOCK.RELEASE orders u:1 100 LATCH redisson_unlock_latch:{orders}:r1 PX 5000",
        ),
        (id(Kind::Fair).release(100, None, false), "RFAIR.RELEASE orders u:1 100"),
        (id(Kind::Fair).release(100, latch, true), "RFAIR.RELEASE orders u:1 100 ID r1 PX 5000 MISSING NOTHELD"),
        (id(Kind::Read).release(100, latch, false), "RRW.RELEASE orders u:1 READ ID r1 PX 5000"),
        (id(Kind::Read).release(100, latch, true), "RRW.RELEASE orders u:1 READ ID r1 PX 5000 MISSING NOTHELD"),
        (id(Kind::Write).release(100, latch, true), "RRW.RELEASE orders u:1 WRITE 100 ID r1 PX 5000 MISSING NOTHELD"),
        (id(Kind::Read).renew(100), "RRW.RENEW orders u:1 100"),
        (id(Kind::Fair).status(), "RFAIR.STATUS orders u:1"),
        (id(Kind::Write).status(), "RRW.STATUS orders u:1"),
        (id(Kind::Read).force_release(), "RRW.FORCERELEASE orders READ"),
        (id(Kind::Fair).cancel(300), "RFAIR.CANCEL orders u:1 WAIT 300"),
        (id(Kind::Plain).cancel_request(b"r-7"), "RLOCK.CANCEL orders u:1 r-7"),
        (id(Kind::Fenced).acquire(100, Some(7)), "RFENCED.ACQUIRE orders u:1 100"),
        (id(Kind::Fenced).release(100, None, true), "RLOCK.RELEASE orders u:1 100"),
        (id(Kind::Fenced).release(100, latch, true), "RLOCK.RELEASE orders u:1 100 ID r1 PX 5000"),
        (id(Kind::Fenced).renew(100), "RLOCK.RENEW orders u:1 100"),
    ];
    for (cmd, expected) in cases {
        assert_eq!(args(&cmd).join(" "), expected);
    }
}

#[test]
fn each_kind_has_its_channel() {
    assert_eq!(id(Kind::Plain).channel(), b"redisson_lock__channel:{orders}");
    assert_eq!(id(Kind::Fair).channel(), b"redisson_lock__channel:{orders}:u:1");
    assert_eq!(id(Kind::Read).channel(), b"redisson_rwlock:{orders}");
    assert_eq!(id(Kind::Write).channel(), id(Kind::Read).channel());
    assert_eq!(id(Kind::Fenced).channel(), id(Kind::Plain).channel());
}

fn pairs(fields: &[(&str, Value)]) -> Value {
    Value::Array(
        fields.iter().flat_map(|(name, value)| [BulkString(name.as_bytes().to_vec()), value.clone()]).collect(),
    )
}

#[test]
fn full_replies() {
    let full = |granted, lease_ms| {
        vec![("granted", Int(granted)), ("holds", Int(1)), ("lease_ms", Int(lease_ms)), ("waited_ms", Int(40))]
    };
    let with_token = |granted, token| pairs(&[full(granted, 900), vec![("token", Int(token))]].concat());
    let reply = |granted, lease_ms, token| FullReply { granted, holds: 1, lease_ms, waited_ms: 40, token };
    let (plain, fenced) = (Kind::Plain, Kind::Fenced);
    let cases = [
        (pairs(&full(1, 900)), plain, Some(reply(true, 900, None))),
        (pairs(&full(0, -1)), plain, Some(reply(false, -1, None))),
        (with_token(1, 7), fenced, Some(reply(true, 900, Some(7)))),
        (with_token(0, -1), fenced, Some(reply(false, 900, Some(-1)))),
        // A fenced grant needs its token; no other kind's has one.
        (pairs(&full(1, 900)), fenced, None),
        (with_token(1, 7), plain, None),
        (with_token(1, -1), fenced, None),
        (with_token(1, 0), fenced, None),
        (pairs(&full(2, 900)), plain, None),
        (pairs(&[("granted", Int(1)), ("holds", Int(1))]), plain, None),
        (pairs(&[full(1, 900), vec![("holds", BulkString(b"many".to_vec()))]].concat()), plain, None),
        (Array(vec![BulkString(b"granted".to_vec())]), plain, None),
        // RESP3's map, and a number sent as a string.
        (
            Map(full(1, 900).into_iter().map(|(name, value)| (BulkString(name.into()), value)).collect()),
            plain,
            Some(reply(true, 900, None)),
        ),
        (
            pairs(&[
                ("granted", Int(1)),
                ("holds", BulkString(b"1".to_vec())),
                ("lease_ms", Int(900)),
                ("waited_ms", Int(40)),
            ]),
            plain,
            Some(reply(true, 900, None)),
        ),
        (Nil, plain, None),
        (Int(900), plain, None),
    ];
    for (reply, kind, expected) in cases {
        assert_eq!(FullReply::parse(&reply, kind).ok(), expected, "{reply:?} of {kind:?}");
    }
}

#[test]
fn short_replies_of_holds_acquires() {
    let granted = |holds| Some(FullReply { granted: true, holds, lease_ms: -1, waited_ms: 0, token: None });
    let refused =
        |retry_ms| Some(FullReply { granted: false, holds: 0, lease_ms: retry_ms, waited_ms: 0, token: None });
    let cases = [
        (Nil, 0, granted(1)),
        (Nil, 2, granted(3)),
        (Int(900), 0, refused(900)),
        (Int(-1), 1, refused(-1)),
        (Okay, 0, None),
        (pairs(&[("granted", Int(1))]), 0, None),
        // A replay, replied in full.
        (
            pairs(&[("granted", Int(1)), ("holds", Int(1)), ("lease_ms", Int(700)), ("waited_ms", Int(0))]),
            0,
            Some(FullReply { granted: true, holds: 1, lease_ms: 700, waited_ms: 0, token: None }),
        ),
    ];
    for (reply, holds, expected) in cases {
        assert_eq!(FullReply::from_short(&reply, holds).ok(), expected, "{reply:?} after HOLDS {holds}");
    }
}

#[test]
fn status_reads_the_pairs_of_each_kind() {
    let rlock =
        pairs(&[("locked", Int(1)), ("ttl_ms", Int(900)), ("holders", Int(1)), ("held", Nil), ("hold_count", Int(2))]);
    let expected = Status { locked: true, ttl_ms: 900, hold_count: 2 };
    assert_eq!(Status::parse(rlock.clone(), Kind::Plain).unwrap(), expected);
    assert_eq!(Status::parse(rlock, Kind::Fair).unwrap(), expected);
    let rw = |mode: Value, readers| {
        pairs(&[
            ("mode", mode),
            ("ttl_ms", Int(500)),
            ("readers", Int(readers)),
            ("read_count", Int(3)),
            ("write_count", Int(1)),
        ])
    };
    let cases = [
        (rw(BulkString(b"write".to_vec()), 1), Kind::Read, true, 3),
        (rw(BulkString(b"write".to_vec()), 0), Kind::Read, false, 3),
        (rw(BulkString(b"write".to_vec()), 0), Kind::Write, true, 1),
        (rw(BulkString(b"read".to_vec()), 2), Kind::Read, true, 3),
        (rw(BulkString(b"read".to_vec()), 2), Kind::Write, false, 1),
        (rw(Nil, 0), Kind::Read, false, 3),
    ];
    for (reply, kind, locked, hold_count) in cases {
        assert_eq!(Status::parse(reply, kind).unwrap(), Status { locked, ttl_ms: 500, hold_count });
    }
    assert!(Status::parse(Int(1), Kind::Plain).is_err());
}
