//! Section 6: server cost of the fair and read-write locks: one acquire and
//! one latched release (a fresh request id each, as clients send them, and
//! the latch key deleted after) on fresh keys, native vs Redisson's scripts
//! vs the same effects as Redis's own commands in MULTI/EXEC (atomic, as a
//! lock needs).

use crate::raw::encode;
use crate::report::Table;
use crate::server_cost::{compare, transaction, Measurement, Style, LEASE_MS, OWNER};
use rlock_protocol::{rwlock_channel, rwlock_timeout_key, rwlock_write_field, unlock_latch_key};
use testkit::{FairScripts, RwScripts, Server};

const LATCH_MS: &[u8] = b"20000";

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// One primitive's table and its two ratios: scripts ÷ native and
/// native ÷ own commands (server time).
pub struct Family {
    pub name: &'static str,
    pub table: Table,
    pub scripts_over_native: f64,
    pub native_over_own: f64,
}

impl Family {
    /// The ratios of `results` measured in the order native, scripts, own commands.
    pub fn new(name: &'static str, table: Table, results: &[Measurement]) -> Self {
        Family {
            name,
            table,
            scripts_over_native: results[1].usec_per_pair / results[0].usec_per_pair,
            native_over_own: results[0].usec_per_pair / results[2].usec_per_pair,
        }
    }
}

/// Each style's pair followed by the client's `DEL` of the latch key (as
/// rlock-client and Redisson 4.3+ send it), not counted in the pair's
/// time: without it the latch keys pile up and every style mostly measures
/// the keyspace's rehashing.
fn with_latch_del<'a>(style: Style<'a>) -> Style<'a> {
    let Style { label, commands, replies, pair } = style;
    Style {
        label,
        commands,
        replies: replies + 1,
        pair: Box::new(move |key, unique| {
            let latch = unlock_latch_key(key, format!("{unique:032x}").as_bytes());
            [pair(key, unique), encode(&[b"DEL", &latch])].concat()
        }),
    }
}

fn measure(server: &Server, name: &'static str, styles: [Style; 3]) -> Family {
    let styles = styles.map(with_latch_del);
    let (table, results) = compare(server, &styles, 0);
    Family::new(name, table, &results)
}

/// The fair lock, then the read and the write sides of the read-write lock.
pub fn run(server: &Server) -> Vec<Family> {
    let (fair, rw) = (FairScripts::default(), RwScripts::default());
    let mut admin = server.connection();
    fair.load(&mut admin).unwrap();
    rw.load(&mut admin).unwrap();
    let lease = LEASE_MS.to_string();
    let lease = lease.as_bytes();
    let id = |unique: u64| format!("{unique:032x}").into_bytes();
    let fair_styles = [
        Style {
            label: "`RFAIR.ACQUIRE` + `RFAIR.RELEASE … ID`",
            commands: &["rfair.acquire", "rfair.release"],
            replies: 2,
            pair: Box::new(|key, unique| {
                let id = id(unique);
                [
                    encode(&[b"RFAIR.ACQUIRE", key, OWNER, lease]),
                    encode(&[b"RFAIR.RELEASE", key, OWNER, lease, b"ID", &id]),
                ]
                .concat()
            }),
        },
        Style {
            label: "Redisson's fair scripts (EVALSHA)",
            commands: &["evalsha"],
            replies: 2,
            pair: Box::new(|key, unique| {
                let now = now_ms();
                [
                    fair.acquire(key, OWNER, LEASE_MS, Some(300_000), now).get_packed_command(),
                    fair.release(key, OWNER, LEASE_MS, &id(unique), now).get_packed_command(),
                ]
                .concat()
            }),
        },
        Style {
            label: "the same effects in `MULTI`/`EXEC` (`HSET`, `PEXPIRE`; `DEL`, `SET … PX`)",
            commands: &["multi", "exec"],
            replies: 12,
            pair: Box::new(|key, unique| {
                let latch = unlock_latch_key(key, &id(unique));
                [
                    transaction(&[&[b"HSET", key, OWNER, b"1"], &[b"PEXPIRE", key, lease]]),
                    transaction(&[&[b"DEL", key], &[b"SET", &latch, b"1", b"PX", LATCH_MS]]),
                ]
                .concat()
            }),
        },
    ];
    let read_styles = [
        Style {
            label: "`RRW.ACQUIRE … READ` + `RRW.RELEASE … READ ID`",
            commands: &["rrw.acquire", "rrw.release"],
            replies: 2,
            pair: Box::new(|key, unique| {
                let id = id(unique);
                [
                    encode(&[b"RRW.ACQUIRE", key, OWNER, b"READ", lease]),
                    encode(&[b"RRW.RELEASE", key, OWNER, b"READ", b"ID", &id]),
                ]
                .concat()
            }),
        },
        Style {
            label: "Redisson's read-lock scripts (EVALSHA)",
            commands: &["evalsha"],
            replies: 2,
            pair: Box::new(|key, unique| {
                [
                    rw.read_acquire(key, OWNER, LEASE_MS).get_packed_command(),
                    rw.read_release(key, OWNER, &id(unique)).get_packed_command(),
                ]
                .concat()
            }),
        },
        Style {
            label: "the same effects in `MULTI`/`EXEC` (`HSET`, `SET … PX`, `PEXPIRE`; `DEL`, `PUBLISH`, `SET … PX`)",
            commands: &["multi", "exec"],
            replies: 16,
            pair: Box::new(|key, unique| {
                let (timeout, channel) = (rwlock_timeout_key(key, OWNER, 1), rwlock_channel(key));
                let latch = unlock_latch_key(key, &id(unique));
                [
                    transaction(&[
                        &[b"HSET", key, b"mode", b"read", OWNER, b"1"],
                        &[b"SET", &timeout, b"1", b"PX", lease],
                        &[b"PEXPIRE", key, lease],
                    ]),
                    transaction(&[
                        &[b"DEL", &timeout, key],
                        &[b"PUBLISH", &channel, b"0"],
                        &[b"SET", &latch, b"1", b"PX", LATCH_MS],
                    ]),
                ]
                .concat()
            }),
        },
    ];
    let write_field = rwlock_write_field(OWNER);
    let write_field = write_field.as_slice();
    let write_styles = [
        Style {
            label: "`RRW.ACQUIRE … WRITE` + `RRW.RELEASE … WRITE ID`",
            commands: &["rrw.acquire", "rrw.release"],
            replies: 2,
            pair: Box::new(|key, unique| {
                let id = id(unique);
                [
                    encode(&[b"RRW.ACQUIRE", key, OWNER, b"WRITE", lease]),
                    encode(&[b"RRW.RELEASE", key, OWNER, b"WRITE", lease, b"ID", &id]),
                ]
                .concat()
            }),
        },
        Style {
            label: "Redisson's write-lock scripts (EVALSHA)",
            commands: &["evalsha"],
            replies: 2,
            pair: Box::new(|key, unique| {
                [
                    rw.write_acquire(key, OWNER, LEASE_MS).get_packed_command(),
                    rw.write_release(key, OWNER, LEASE_MS, &id(unique)).get_packed_command(),
                ]
                .concat()
            }),
        },
        Style {
            label: "the same effects in `MULTI`/`EXEC` (`HSET`, `PEXPIRE`; `DEL`, `PUBLISH`, `SET … PX`)",
            commands: &["multi", "exec"],
            replies: 14,
            pair: Box::new(move |key, unique| {
                let latch = unlock_latch_key(key, &id(unique));
                [
                    transaction(&[&[b"HSET", key, b"mode", b"write", write_field, b"1"], &[b"PEXPIRE", key, lease]]),
                    transaction(&[
                        &[b"DEL", key],
                        &[b"PUBLISH", &rwlock_channel(key), b"1"],
                        &[b"SET", &latch, b"1", b"PX", LATCH_MS],
                    ]),
                ]
                .concat()
            }),
        },
    ];
    vec![
        measure(server, "fair lock", fair_styles),
        measure(server, "read lock", read_styles),
        measure(server, "write lock", write_styles),
    ]
}
