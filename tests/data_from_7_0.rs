//! Files written by Redis 7.0 (Debian's `redis-server`, whatever
//! `RLOCK_SERVER_BIN` names) with the module, loaded by the server under
//! test: an operator upgrading to Redis 8 or Valkey keeps every lock. One of
//! each kind is written; after the load every key, value and PTTL is the
//! same (a PTTL less only the time that passed) and the module's commands
//! work on them. On Redis 7.0 itself it is a round trip.

use redis::{Connection, Value};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;
use testkit::{server_bin, Server};

/// Debian's Redis 7.0, the server that writes the files.
const WRITER: &str = "redis-server";
const LEASE_MS: i64 = 600_000;
const PERMIT: &str = "permit-1";

/// A key's type and value (as the server replies them), and its PTTL.
type Contents = BTreeMap<String, (String, i64)>;

#[test]
fn an_rdb_written_by_redis_7_0_loads_with_every_lock() {
    let writer = Server::builder().binary(WRITER).start();
    let mut con = writer.connection();
    let token = write_every_kind(&mut con);
    let () = redis::cmd("SAVE").query(&mut con).expect("SAVE");
    loads_with_every_lock(&mut con, &writer, token, "dump.rdb", |server| server);
}

/// Redis 7.0's AOF is multi-part: a directory with a manifest, a base and
/// an increment holding the module's replicated effects (`HSET`,
/// `PEXPIREAT`, …), which the server under test replays.
#[test]
fn an_aof_written_by_redis_7_0_loads_with_every_lock() {
    // Every write reaches the file before its reply.
    let writer = Server::builder().binary(WRITER).config("appendonly", "yes").config("appendfsync", "always").start();
    let mut con = writer.connection();
    let token = write_every_kind(&mut con);
    loads_with_every_lock(&mut con, &writer, token, "appendonlydir", |server| server.config("appendonly", "yes"));
}

/// Copies `file` (a file or a directory) from the writer's directory into a
/// new one, starts the server under test there (its settings through
/// `configure`), and checks what it loaded, then the commands on it.
fn loads_with_every_lock(
    writer_con: &mut Connection,
    writer: &Server,
    token: i64,
    file: &str,
    configure: impl Fn(testkit::ServerBuilder) -> testkit::ServerBuilder,
) {
    // Before the first PTTL read: a PTTL may drop by the time from it to the last.
    let written_at = Instant::now();
    let written = contents(writer_con);
    // Inside the writer's directory, removed with it.
    let copy = writer.dir().join("copy");
    copy_all(&writer.dir().join(file), &copy.join(file));
    let dir = copy.to_str().expect("a UTF-8 path");
    // The later `--dir` wins: the server loads the copy.
    let loaded = configure(Server::builder()).config("dir", dir).start();
    let mut con = loaded.connection();
    let read = contents(&mut con);
    let elapsed_ms = i64::try_from(written_at.elapsed().as_millis()).unwrap() + 1;
    let bin = server_bin();
    assert_eq!(
        read.keys().collect::<Vec<_>>(),
        written.keys().collect::<Vec<_>>(),
        "{bin} loaded other keys than Redis 7.0 wrote:\n{}",
        loaded.log()
    );
    for (key, (value, pttl)) in &written {
        let (read_value, read_pttl) = &read[key];
        assert_eq!(read_value, value, "{key}'s value on {bin}");
        let kept = if *pttl < 0 { *read_pttl == *pttl } else { (pttl - elapsed_ms..=*pttl).contains(read_pttl) };
        assert!(kept, "{key}'s PTTL on {bin}: {read_pttl}, written {pttl}, {elapsed_ms} ms ago");
    }
    commands_work_on_every_kind(&mut con, token);
}

/// Writes one lock of each kind; the fenced lock's token.
fn write_every_kind(con: &mut Connection) -> i64 {
    let lease = LEASE_MS.to_string();
    let run = |con: &mut Connection, args: &[&str]| -> Value {
        redis::cmd(args[0]).arg(&args[1..]).query(con).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    };
    assert_eq!(run(con, &["RLOCK.ACQUIRE", "lock", "holder", &lease, "ID", "request-1"]), Value::Nil);
    assert_eq!(run(con, &["RFAIR.ACQUIRE", "fair", "holder", &lease]), Value::Nil);
    let queued = run(con, &["RFAIR.ACQUIRE", "fair", "waiter", &lease, "WAIT", &lease]);
    assert!(matches!(queued, Value::Int(hint) if hint >= 1), "the fair lock's waiter queued: {queued:?}");
    assert_eq!(run(con, &["RRW.ACQUIRE", "rw", "reader", "READ", &lease]), Value::Nil);
    assert_eq!(run(con, &["RSEM.TRYSETPERMITS", "sem", "5"]), Value::Int(1));
    assert_eq!(run(con, &["RSEM.TRYACQUIRE", "sem", "2"]), Value::Int(1));
    assert_eq!(run(con, &["RPSEM.TRYSETPERMITS", "psem", "3"]), Value::Int(1));
    assert_eq!(run(con, &["RPSEM.TRYACQUIRE", "psem", &lease, PERMIT]), Value::BulkString(b"OK".to_vec()));
    assert_eq!(run(con, &["RLATCH.TRYSETCOUNT", "latch", "2"]), Value::Int(1));
    let fenced = run(con, &["RFENCED.ACQUIRE", "fenced", "holder", &lease]);
    let Value::Array(reply) = &fenced else { panic!("the fenced lock's reply: {fenced:?}") };
    assert_eq!(reply[0], Value::Int(-1), "the fenced lock acquired");
    redis::from_redis_value(reply[1].clone()).expect("its token")
}

/// Every key with its type, its value and its PTTL.
fn contents(con: &mut Connection) -> Contents {
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(con).expect("KEYS");
    keys.into_iter()
        .map(|key| {
            let kind: String = redis::cmd("TYPE").arg(&key).query(con).expect("TYPE");
            let read = match kind.as_str() {
                "string" => redis::cmd("GET").arg(&key).clone(),
                "hash" => redis::cmd("HGETALL").arg(&key).clone(),
                "list" => redis::cmd("LRANGE").arg(&key).arg(0).arg(-1).clone(),
                "zset" => redis::cmd("ZRANGE").arg(&key).arg(0).arg(-1).arg("WITHSCORES").clone(),
                other => panic!("{key}: a {other}, which no lock writes"),
            };
            let value: Value = read.query(con).expect("the key's value");
            let pttl: i64 = redis::cmd("PTTL").arg(&key).query(con).expect("PTTL");
            let text = if kind == "hash" { sorted_fields(value) } else { format!("{value:?}") };
            (key, (format!("{kind} {text}"), pttl))
        })
        .collect()
}

/// A hash's fields as text, in order (a server may list them in another
/// order than the one that wrote them).
fn sorted_fields(value: Value) -> String {
    match value {
        Value::Array(items) if items.len() % 2 == 0 => {
            let text = |v: &Value| redis::from_redis_value::<String>(v.clone()).unwrap_or_else(|_| format!("{v:?}"));
            let mut pairs: Vec<String> =
                items.chunks(2).map(|pair| format!("{}={}", text(&pair[0]), text(&pair[1]))).collect();
            pairs.sort();
            pairs.join(" ")
        }
        other => format!("{other:?}"),
    }
}

fn commands_work_on_every_kind(con: &mut Connection, token: i64) {
    let lease = LEASE_MS.to_string();
    let mut run = |args: &[&str]| -> Value {
        redis::cmd(args[0]).arg(&args[1..]).query(con).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    };
    let field = |status: &Value, name: &str| -> Value {
        let Value::Array(items) = status else { panic!("not a status: {status:?}") };
        let at = items.iter().position(|item| *item == Value::BulkString(name.as_bytes().to_vec()));
        items[at.unwrap_or_else(|| panic!("no {name} in {status:?}")) + 1].clone()
    };
    // A resend of the acquire's request id replays its grant.
    assert_eq!(run(&["RLOCK.ACQUIRE", "lock", "holder", &lease, "ID", "request-1"]), Value::Nil);
    assert_eq!(field(&run(&["RLOCK.STATUS", "lock", "holder"]), "hold_count"), Value::Int(1), "the lock held once");
    assert_eq!(run(&["RLOCK.RELEASE", "lock", "holder"]), Value::Int(1), "the lock released");

    assert_eq!(field(&run(&["RFAIR.STATUS", "fair", "waiter"]), "position"), Value::Int(1), "the waiter queued");
    assert_eq!(run(&["RFAIR.RELEASE", "fair", "holder"]), Value::Int(1), "the fair lock released");
    assert_eq!(run(&["RFAIR.ACQUIRE", "fair", "waiter", &lease, "WAIT", &lease]), Value::Nil, "its waiter's turn");

    assert_eq!(field(&run(&["RRW.STATUS", "rw", "reader"]), "read_count"), Value::Int(1), "the read hold");
    assert_eq!(run(&["RRW.RELEASE", "rw", "reader", "READ"]), Value::Int(1), "the read lock released");

    assert_eq!(run(&["RSEM.AVAILABLE", "sem"]), Value::Int(3), "the semaphore's permits left");
    assert_eq!(run(&["RSEM.TRYACQUIRE", "sem", "3"]), Value::Int(1), "the rest taken");

    let lease_left = run(&["RPSEM.LEASE", "psem", PERMIT]);
    assert!(matches!(lease_left, Value::Int(ms) if 0 < ms && ms <= LEASE_MS), "the permit's lease: {lease_left:?}");
    assert_eq!(run(&["RPSEM.RELEASE", "psem", PERMIT]), Value::Int(1), "the permit returned");
    assert_eq!(run(&["RPSEM.AVAILABLE", "psem"]), Value::Int(3), "every permit available");

    assert_eq!(run(&["RLATCH.COUNT", "latch"]), Value::Int(2), "the latch's count");
    assert_eq!(run(&["RLATCH.COUNTDOWN", "latch"]), Value::Nil);
    assert_eq!(run(&["RLATCH.COUNT", "latch"]), Value::Int(1), "counted down");

    assert_eq!(run(&["RFENCED.TOKEN", "fenced"]), Value::Int(token), "the fenced lock's token");
    assert_eq!(run(&["RLOCK.RELEASE", "fenced", "holder"]), Value::Int(1), "the fenced lock released");
    let next = run(&["RFENCED.ACQUIRE", "fenced", "next", &lease]);
    let Value::Array(reply) = &next else { panic!("the next fenced acquire's reply: {next:?}") };
    assert!(
        reply[0] == Value::Int(-1) && matches!(reply[1], Value::Int(next) if next > token),
        "a later token: {next:?}"
    );
}

/// Copies a file, or a directory's files (an AOF's parts), to `to`.
fn copy_all(from: &Path, to: &Path) {
    if from.is_dir() {
        for entry in std::fs::read_dir(from).expect("read the directory") {
            let entry = entry.expect("a directory entry");
            copy_all(&entry.path(), &to.join(entry.file_name()));
        }
    } else {
        std::fs::create_dir_all(to.parent().expect("a directory")).expect("create the copy's directory");
        std::fs::copy(from, to).unwrap_or_else(|e| panic!("copy {}: {e}", from.display()));
    }
}
