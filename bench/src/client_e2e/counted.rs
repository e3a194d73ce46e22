//! The cycles of section 2 counted rather than timed: the server's
//! instructions per lock+unlock cycle (callgrind), by loop and by part of
//! the client's cycle. What no client logic can change: the price its
//! commands put on the server.

use crate::callgrind::{figure, Counted};
use crate::raw::{encode, RawConnection};
use crate::report::{ratio, Table};
use crate::server_cost::{bench_key, LEASE_MS, OWNER};
use testkit::redisson_lock::{scripts, sha1_hex};
use testkit::{release_channel, unlock_latch_key, RedissonScripts, Server};

/// Cycles per lock in a batch: the client's sweeper deletes this many
/// latch keys in one `DEL`.
const SWEEP_EVERY: usize = 16;
/// Locks per pipelined batch, batches counted.
const LOCKS: usize = 100;
const BATCHES: usize = 3;

pub const ABOUT: &str = "\
The same cycles counted: the instructions the server ran per lock+unlock cycle (callgrind, every
thread; parsing, the commands, replication to no replica, the replies; not the kernel's work), on a
server of its own, one connection, 100 locks per pipelined batch, each lock cycled 16 times in a
row (the client's sweeper deletes 16 latch keys in one `DEL`), after an unmeasured batch on an
emptied database. Scripts run as Lua (`rlock.redisson-scripts off`). The parts of the client's
cycle are the differences between rows: `HOLDS` on the acquire, the release's unlock latch (`LATCH
… PX …`: the latch key written with its expiry, replicated and announced), the latch's share of
the sweeper's `DEL`.
";

/// One lock's [`SWEEP_EVERY`] cycles from a cycle number, encoded.
type Cycles = Box<dyn Fn(&[u8], u64) -> Vec<u8>>;

/// A counted row: its label and one lock's cycles.
struct Row {
    label: &'static str,
    cycles: Cycles,
    /// Replies to one lock's cycles.
    replies: usize,
}

/// Where the latch's instructions go: Redis's calls it adds to a release.
const LATCH_PARTS: [(&str, &str); 5] = [
    ("???:RM_Replicate ", "replication (`SET … PXAT`)"),
    ("???:RM_StringSet ", "the latch's value written"),
    ("???:RM_SetAbsExpire ", "its expiry"),
    ("???:RM_OpenKey ", "its key opened"),
    ("rlock::commands::args::parse_latch ", "`LATCH … PX …` parsed"),
];

/// The counted table of the loops, and the table of the client cycle's
/// parts.
pub fn count() -> Result<(Table, Table), String> {
    let mut counted = Counted::start(Some("off"))?;
    let redisson = scripts(testkit::redisson_lock::VERSION);
    let pre_3_24 = RedissonScripts::default();
    let mut admin = counted.server.connection();
    pre_3_24.load(&mut admin).map_err(|e| e.to_string())?;
    for text in [&redisson.acquire, &redisson.release] {
        let _: String =
            redis::cmd("SCRIPT").arg("LOAD").arg(text.as_slice()).query(&mut admin).map_err(|e| e.to_string())?;
    }
    let (acquire_sha, release_sha) = (sha1_hex(&redisson.acquire), sha1_hex(&redisson.release));
    let latch_ms = rlock_protocol::DEFAULT_LATCH_MS.to_string();
    let lease = LEASE_MS.to_string();
    let rows: Vec<Row> = vec![
        Row {
            label: "Redisson 4.7.0 wire cycle",
            cycles: Box::new(move |key, first| {
                let channel = release_channel(key);
                cycles(first, |cycle| {
                    let latch = unlock_latch_key(key, format!("{cycle:032x}").as_bytes());
                    let acquire = [b"EVALSHA", acquire_sha.as_bytes(), b"1", key, lease.as_bytes(), OWNER];
                    let release: [&[u8]; 11] = [
                        b"EVALSHA",
                        release_sha.as_bytes(),
                        b"3",
                        key,
                        &channel,
                        &latch,
                        b"0",
                        lease.as_bytes(),
                        OWNER,
                        b"publish",
                        latch_ms.as_bytes(),
                    ];
                    [encode(&acquire), encode(&release), encode(&[b"DEL", &latch])].concat()
                })
            }),
            replies: 3 * SWEEP_EVERY,
        },
        Row {
            label: "pre-3.24 scripts",
            cycles: Box::new(move |key, first| {
                cycles(first, |_| {
                    [
                        pre_3_24.acquire(key, OWNER, LEASE_MS).get_packed_command(),
                        pre_3_24.release(key, OWNER, LEASE_MS).get_packed_command(),
                    ]
                    .concat()
                })
            }),
            replies: 2 * SWEEP_EVERY,
        },
        Row {
            label: "bare native",
            cycles: Box::new(|key, first| cycles(first, |_| [bare_acquire(key), bare_release(key)].concat())),
            replies: 2 * SWEEP_EVERY,
        },
        Row {
            label: "`HOLDS 0` acquire, bare release",
            cycles: Box::new(|key, first| cycles(first, |_| [holds_acquire(key), bare_release(key)].concat())),
            replies: 2 * SWEEP_EVERY,
        },
        Row {
            label: "bare acquire, latched release",
            cycles: Box::new(|key, first| {
                cycles(first, |cycle| [bare_acquire(key), latched_release(key, cycle)].concat())
            }),
            replies: 2 * SWEEP_EVERY,
        },
        Row {
            label: "client's commands",
            cycles: Box::new(|key, first| {
                let mut out = cycles(first, |cycle| [holds_acquire(key), latched_release(key, cycle)].concat());
                out.extend(sweep(key, first));
                out
            }),
            replies: 2 * SWEEP_EVERY + 1,
        },
    ];
    let mut figures = Vec::new();
    for row in &rows {
        let prepare = |server: &Server| {
            let _: () = redis::cmd("FLUSHALL").query(&mut server.connection()).expect("FLUSHALL");
        };
        prepare(&counted.server);
        send(&counted.server, row, 1);
        prepare(&counted.server);
        let (annotated, ()) = counted.count(|server| send(server, row, BATCHES))?;
        figures.push(annotated);
    }
    let per_cycle =
        |annotated: &str, what: &str| figure(annotated, what).unwrap_or(0.0) / (LOCKS * BATCHES * SWEEP_EVERY) as f64;
    let totals: Vec<f64> = figures.iter().map(|annotated| per_cycle(annotated, "PROGRAM TOTALS")).collect();
    let (bare, holds, latched, client) = (totals[2], totals[3], totals[4], totals[5]);
    let mut loops = Table::new(&["cycle", "server instructions per cycle", "this ÷ bare native"]);
    for (index, row) in rows.iter().enumerate().filter(|(index, _)| ![3, 4].contains(index)) {
        loops.row(vec![row.label.into(), format!("{:.0}", totals[index]), ratio(totals[index], bare)]);
    }
    let mut parts = Table::new(&["part of the client's cycle", "instructions per cycle"]);
    parts.row(vec!["the bare native cycle".into(), format!("{bare:.0}")]);
    parts.row(vec!["`HOLDS 0` on the acquire".into(), format!("{:+.0}", holds - bare)]);
    parts.row(vec!["the release's unlock latch".into(), format!("{:+.0}", latched - bare)]);
    for (symbol, what) in LATCH_PARTS {
        let added = per_cycle(&figures[4], symbol) - per_cycle(&figures[2], symbol);
        parts.row(vec![format!("of which {what}"), format!("{added:+.0}")]);
    }
    parts.row(vec![
        format!("the sweeper's `DEL` of {SWEEP_EVERY} latch keys, per cycle"),
        format!("{:+.0}", client - latched - (holds - bare)),
    ]);
    parts.row(vec!["the client's commands".into(), format!("{client:.0}")]);
    Ok((loops, parts))
}

fn bare_acquire(key: &[u8]) -> Vec<u8> {
    encode(&[b"RLOCK.ACQUIRE", key, OWNER, LEASE_MS.to_string().as_bytes()])
}

fn bare_release(key: &[u8]) -> Vec<u8> {
    encode(&[b"RLOCK.RELEASE", key, OWNER, LEASE_MS.to_string().as_bytes()])
}

/// The client's acquire: the owner's count, the short reply.
fn holds_acquire(key: &[u8]) -> Vec<u8> {
    encode(&[b"RLOCK.ACQUIRE", key, OWNER, LEASE_MS.to_string().as_bytes(), b"HOLDS", b"0"])
}

/// The client's release with the unlock latch of cycle `cycle`.
fn latched_release(key: &[u8], cycle: u64) -> Vec<u8> {
    let (lease, latch) = (LEASE_MS.to_string(), unlock_latch_key(key, &request_id(cycle)));
    encode(&[b"RLOCK.RELEASE", key, OWNER, lease.as_bytes(), b"LATCH", &latch, b"PX", lease.as_bytes()])
}

fn request_id(cycle: u64) -> Vec<u8> {
    format!("{cycle}-r").into_bytes()
}

/// The sweeper's `DEL` of the latch keys of the [`SWEEP_EVERY`] cycles
/// from `first`.
fn sweep(key: &[u8], first: u64) -> Vec<u8> {
    let latches: Vec<Vec<u8>> =
        (first..first + SWEEP_EVERY as u64).map(|cycle| unlock_latch_key(key, &request_id(cycle))).collect();
    let mut args: Vec<&[u8]> = vec![b"DEL"];
    args.extend(latches.iter().map(Vec::as_slice));
    encode(&args)
}

/// `cycle(n)` for the [`SWEEP_EVERY`] cycles numbered from `first`.
fn cycles(first: u64, cycle: impl Fn(u64) -> Vec<u8>) -> Vec<u8> {
    (first..first + SWEEP_EVERY as u64).flat_map(cycle).collect()
}

/// `batches` pipelined batches of every lock's cycles.
fn send(server: &Server, row: &Row, batches: usize) {
    let mut connection = RawConnection::connect(server.port());
    let keys: Vec<Vec<u8>> = (0..LOCKS).map(|lock| bench_key(0, lock)).collect();
    for batch in 0..batches {
        let first = (batch * LOCKS * SWEEP_EVERY) as u64;
        let encoded: Vec<u8> = keys
            .iter()
            .enumerate()
            .flat_map(|(lock, key)| (row.cycles)(key, first + (lock * SWEEP_EVERY) as u64))
            .collect();
        connection.round_trip(&encoded, LOCKS * row.replies);
    }
}
