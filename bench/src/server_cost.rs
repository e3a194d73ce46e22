//! What one acquire+release pair costs the server, per lock style, on
//! fresh keys: server time from `INFO commandstats`, and pipelined
//! throughput. Section 1 measures the plain lock; `family_cost` the other
//! primitives, with the same engine.

use crate::raw::{encode, RawConnection};
use crate::report::{ratio, Table};
use crate::server_info;
use testkit::{RedissonScripts, Server};

pub const OWNER: &[u8] = b"8f2c6e1a-5b7d-4c1e-9a3f-2d4b6c8e0f1a:1";
pub const LEASE_MS: i64 = 30_000;
/// Pairs per pipelined batch, batches per connection, connections.
pub const BATCH: usize = 100;
const BATCHES: usize = 1000;
pub const CONNECTIONS: usize = 2;

/// The compare-and-delete release of SET-NX locks (redsync, redis-py).
const COMPARE_AND_DELETE: &str =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

/// One way of taking and giving back a lock.
pub struct Style<'a> {
    pub label: &'static str,
    /// The top-level commands whose `commandstats` time is the pair's cost
    /// (commands run inside scripts are part of the script's time).
    pub commands: &'static [&'static str],
    /// Reply lines per pair (nil, integer and status replies are one line;
    /// an EXEC reply is one plus one per command).
    pub replies: usize,
    /// The encoded pair on one lock name; `unique` differs on every call
    /// (for request ids that must not repeat).
    #[allow(clippy::type_complexity)]
    pub pair: Box<dyn Fn(&[u8], u64) -> Vec<u8> + Sync + 'a>,
}

pub struct Measurement {
    pub usec_per_pair: f64,
    pub pairs_per_sec: f64,
}

fn measure(server: &Server, style: &Style) -> Measurement {
    measure_batches(server, style, BATCHES)
}

/// The lock name of connection `c`'s `i`th pair in every batch.
pub fn bench_key(c: usize, i: usize) -> Vec<u8> {
    format!("bench:{c}:{i}").into_bytes()
}

/// [`measure`] with `batches` pipelined batches per connection.
pub fn measure_batches(server: &Server, style: &Style, batches: usize) -> Measurement {
    let mut admin = server.connection();
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(&mut admin).unwrap();
    let started = std::time::Instant::now();
    send_batches(server, style, batches);
    let elapsed = started.elapsed().as_secs_f64();
    let pairs = (CONNECTIONS * batches * BATCH) as f64;
    let usec: f64 = style.commands.iter().map(|name| server_info::command_stat(server, name, "usec")).sum();
    Measurement { usec_per_pair: usec / pairs, pairs_per_sec: pairs / elapsed }
}

/// Sends `batches` pipelined batches of `style`'s pairs on each connection,
/// and nothing else.
pub fn send_batches(server: &Server, style: &Style, batches: usize) {
    std::thread::scope(|scope| {
        for c in 0..CONNECTIONS {
            scope.spawn(move || {
                let mut connection = RawConnection::connect(server.port());
                let keys: Vec<Vec<u8>> = (0..BATCH).map(|i| bench_key(c, i)).collect();
                for round in 0..batches {
                    let unique = ((c * batches + round) * BATCH) as u64;
                    let batch: Vec<u8> =
                        keys.iter().enumerate().flat_map(|(i, key)| (style.pair)(key, unique + i as u64)).collect();
                    connection.round_trip(&batch, style.replies * BATCH);
                }
            });
        }
    });
}

/// Measures every style; ratios are against `styles[reference]`.
pub fn compare(server: &Server, styles: &[Style], reference: usize) -> (Table, Vec<Measurement>) {
    let results: Vec<Measurement> = styles.iter().map(|style| measure(server, style)).collect();
    let base = &results[reference];
    let mut table = Table::new(&["style", "server µs per pair", "this ÷ native", "pairs/s pipelined", "this ÷ native"]);
    for (style, m) in styles.iter().zip(&results) {
        table.row(vec![
            style.label.into(),
            format!("{:.2}", m.usec_per_pair),
            ratio(m.usec_per_pair, base.usec_per_pair),
            format!("{:.0}", m.pairs_per_sec),
            ratio(m.pairs_per_sec, base.pairs_per_sec),
        ]);
    }
    (table, results)
}

/// Section 1: the plain lock. Returns the table and (scripts ÷ native
/// server time, native ÷ scripts throughput).
pub fn run(server: &Server) -> (Table, (f64, f64)) {
    let scripts = RedissonScripts::default();
    let compare_and_delete = redis::Script::new(COMPARE_AND_DELETE);
    let mut admin = server.connection();
    scripts.load(&mut admin).unwrap();
    compare_and_delete.prepare_invoke().load(&mut admin).unwrap();
    let lease = LEASE_MS.to_string();
    let lease = lease.as_bytes();
    let styles = [
        Style {
            label: "`RLOCK.ACQUIRE` + `RLOCK.RELEASE`",
            commands: &["rlock.acquire", "rlock.release"],
            replies: 2,
            pair: Box::new(|key, _| {
                [encode(&[b"RLOCK.ACQUIRE", key, OWNER, lease]), encode(&[b"RLOCK.RELEASE", key, OWNER, lease])]
                    .concat()
            }),
        },
        Style {
            label: "Redisson-protocol scripts (EVALSHA)",
            commands: &["evalsha"],
            replies: 2,
            pair: Box::new(|key, _| {
                [
                    scripts.acquire(key, OWNER, LEASE_MS).get_packed_command(),
                    scripts.release(key, OWNER, LEASE_MS).get_packed_command(),
                ]
                .concat()
            }),
        },
        Style {
            label: "the same effects as Redis commands (`HINCRBY`, `PEXPIRE`, `DEL`, `PUBLISH`)",
            commands: &["hincrby", "pexpire", "del", "publish"],
            replies: 4,
            pair: Box::new(|key, _| {
                let channel = rlock_protocol::release_channel(key);
                [
                    encode(&[b"HINCRBY", key, OWNER, b"1"]),
                    encode(&[b"PEXPIRE", key, lease]),
                    encode(&[b"DEL", key]),
                    encode(&[b"PUBLISH", &channel, b"0"]),
                ]
                .concat()
            }),
        },
        Style {
            label: "the same, each half a `MULTI`/`EXEC` transaction (atomic, as a lock needs)",
            commands: &["multi", "exec"],
            replies: 12,
            pair: Box::new(|key, _| {
                let channel = rlock_protocol::release_channel(key);
                transaction(&[&[b"HINCRBY", key, OWNER, b"1"], &[b"PEXPIRE", key, lease]])
                    .into_iter()
                    .chain(transaction(&[&[b"DEL", key], &[b"PUBLISH", &channel, b"0"]]))
                    .collect()
            }),
        },
        Style {
            label: "`SET NX PX` + compare-and-delete script",
            commands: &["set", "evalsha"],
            replies: 2,
            pair: Box::new(|key, _| {
                let hash = compare_and_delete.get_hash().as_bytes();
                [encode(&[b"SET", key, OWNER, b"NX", b"PX", lease]), encode(&[b"EVALSHA", hash, b"1", key, OWNER])]
                    .concat()
            }),
        },
        Style {
            label: "plain `SET` + `DEL` (floor)",
            commands: &["set", "del"],
            replies: 2,
            pair: Box::new(|key, _| [encode(&[b"SET", key, OWNER]), encode(&[b"DEL", key])].concat()),
        },
    ];
    let (table, results) = compare(server, &styles, 0);
    let (native, scripted) = (&results[0], &results[1]);
    (table, (scripted.usec_per_pair / native.usec_per_pair, native.pairs_per_sec / scripted.pairs_per_sec))
}

/// `MULTI`, the commands, `EXEC`: 2 + 2 × commands reply lines.
pub fn transaction(commands: &[&[&[u8]]]) -> Vec<u8> {
    let mut encoded = encode(&[b"MULTI"]);
    for command in commands {
        encoded.extend(encode(command));
    }
    encoded.extend(encode(&[b"EXEC"]));
    encoded
}
