//! Section 1: what one acquire+release pair costs the server, per lock
//! style, on fresh keys: server time from `INFO commandstats`, and
//! pipelined throughput.

use crate::raw::{encode, RawConnection};
use crate::report::{ratio, Table};
use crate::server_info;
use testkit::{RedissonScripts, Server};

const OWNER: &[u8] = b"8f2c6e1a-5b7d-4c1e-9a3f-2d4b6c8e0f1a:1";
const LEASE_MS: i64 = 30_000;
/// Pairs per pipelined batch, batches per connection, connections.
const BATCH: usize = 100;
const BATCHES: usize = 1000;
const CONNECTIONS: usize = 2;

/// The compare-and-delete release of SET-NX locks (redsync, redis-py).
const COMPARE_AND_DELETE: &str =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

#[derive(Clone, Copy, PartialEq)]
enum Style {
    Native,
    RedissonScripts,
    SetNx,
    Floor,
}

impl Style {
    const ALL: [Style; 4] = [Style::Native, Style::RedissonScripts, Style::SetNx, Style::Floor];

    fn label(self) -> &'static str {
        match self {
            Style::Native => "`RLOCK.ACQUIRE` + `RLOCK.RELEASE`",
            Style::RedissonScripts => "Redisson-protocol scripts (EVALSHA)",
            Style::SetNx => "`SET NX PX` + compare-and-delete script",
            Style::Floor => "plain `SET` + `DEL` (floor)",
        }
    }

    /// The top-level commands whose `commandstats` time is the pair's cost
    /// (commands run inside scripts are part of the script's time).
    fn commands(self) -> &'static [&'static str] {
        match self {
            Style::Native => &["rlock.acquire", "rlock.release"],
            Style::RedissonScripts => &["evalsha"],
            Style::SetNx => &["set", "evalsha"],
            Style::Floor => &["set", "del"],
        }
    }

    /// The encoded acquire and release of one lock.
    fn pair(self, key: &[u8], scripts: &RedissonScripts, compare_and_delete: &redis::Script) -> Vec<u8> {
        let lease = LEASE_MS.to_string();
        match self {
            Style::Native => [
                encode(&[b"RLOCK.ACQUIRE", key, OWNER, lease.as_bytes()]),
                encode(&[b"RLOCK.RELEASE", key, OWNER, lease.as_bytes()]),
            ]
            .concat(),
            Style::RedissonScripts => [
                scripts.acquire(key, OWNER, LEASE_MS).get_packed_command(),
                scripts.release(key, OWNER, LEASE_MS).get_packed_command(),
            ]
            .concat(),
            Style::SetNx => {
                let hash = compare_and_delete.get_hash().as_bytes();
                [
                    encode(&[b"SET", key, OWNER, b"NX", b"PX", lease.as_bytes()]),
                    encode(&[b"EVALSHA", hash, b"1", key, OWNER]),
                ]
                .concat()
            }
            Style::Floor => [encode(&[b"SET", key, OWNER]), encode(&[b"DEL", key])].concat(),
        }
    }
}

pub struct Measurement {
    usec_per_pair: f64,
    pairs_per_sec: f64,
}

fn measure(
    server: &Server,
    style: Style,
    scripts: &RedissonScripts,
    compare_and_delete: &redis::Script,
) -> Measurement {
    let mut admin = server.connection();
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(&mut admin).unwrap();
    let batches: Vec<Vec<u8>> = (0..CONNECTIONS)
        .map(|c| {
            (0..BATCH)
                .flat_map(|i| style.pair(format!("bench:{c}:{i}").as_bytes(), scripts, compare_and_delete))
                .collect()
        })
        .collect();
    let started = std::time::Instant::now();
    std::thread::scope(|scope| {
        for batch in &batches {
            scope.spawn(move || {
                let mut connection = RawConnection::connect(server.port());
                for _ in 0..BATCHES {
                    connection.round_trip(batch, 2 * BATCH);
                }
            });
        }
    });
    let elapsed = started.elapsed().as_secs_f64();
    let pairs = (CONNECTIONS * BATCHES * BATCH) as f64;
    let usec: f64 = style.commands().iter().map(|name| server_info::command_stat(server, name, "usec")).sum();
    Measurement { usec_per_pair: usec / pairs, pairs_per_sec: pairs / elapsed }
}

/// Runs every style on `server` and returns the table.
pub fn run(server: &Server) -> (Table, Vec<(f64, f64)>) {
    let scripts = RedissonScripts::default();
    let compare_and_delete = redis::Script::new(COMPARE_AND_DELETE);
    let mut admin = server.connection();
    scripts.load(&mut admin).unwrap();
    compare_and_delete.prepare_invoke().load(&mut admin).unwrap();

    let results: Vec<(Style, Measurement)> =
        Style::ALL.iter().map(|&style| (style, measure(server, style, &scripts, &compare_and_delete))).collect();
    let native = &results[0].1;
    let mut table =
        Table::new(&["lock style", "server µs per pair", "scripts ÷ this", "pairs/s pipelined", "this ÷ scripts"]);
    let scripted = &results[1].1;
    for (style, m) in &results {
        table.row(vec![
            style.label().into(),
            format!("{:.2}", m.usec_per_pair),
            ratio(scripted.usec_per_pair, m.usec_per_pair),
            format!("{:.0}", m.pairs_per_sec),
            ratio(m.pairs_per_sec, scripted.pairs_per_sec),
        ]);
    }
    let headline = vec![(scripted.usec_per_pair / native.usec_per_pair, native.pairs_per_sec / scripted.pairs_per_sec)];
    (table, headline)
}
