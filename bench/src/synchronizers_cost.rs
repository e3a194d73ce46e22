//! Section 7: server cost of Redisson's synchronizers: the semaphore
//! (a release and an acquire), the permit-expirable semaphore (an acquire
//! and a release of one permit), the count-down latch (a count-down) and the
//! fenced lock (an acquire), native vs Redisson's scripts vs the same
//! effects as Redis's own commands. Where one operation is measured, the
//! step that sets its key up runs natively in every style and is not
//! counted: only the `commands` of each style are.

use crate::family_cost::Family;
use crate::raw::encode;
use crate::server_cost::{compare, transaction, Style, LEASE_MS, OWNER};
use rlock_protocol::{count_down_latch_channel, fenced_token_key, permit_timeout_key, semaphore_channel};
use testkit::{FencedScripts, LatchScripts, PermitSemaphoreScripts, SemaphoreScripts, Server};

/// Each primitive on keys of its own: the styles share the bench's key
/// names, and a key one primitive leaves behind is the wrong type for
/// another.
fn named(prefix: &[u8], key: &[u8]) -> Vec<u8> {
    [prefix, key].concat()
}

fn measure(server: &Server, name: &'static str, styles: [Style; 3]) -> Family {
    let (table, results) = compare(server, &styles, 0);
    Family::new(name, table, &results)
}

fn semaphore(server: &Server) -> Family {
    let scripts = SemaphoreScripts::default();
    scripts.load(&mut server.connection()).unwrap();
    let key = |key: &[u8]| named(b"semaphore:", key);
    let styles = [
        Style {
            label: "`RSEM.RELEASE` + `RSEM.TRYACQUIRE`",
            commands: &["rsem.release", "rsem.tryacquire"],
            replies: 2,
            pair: Box::new(move |name, _| {
                let name = key(name);
                [encode(&[b"RSEM.RELEASE", &name, b"1"]), encode(&[b"RSEM.TRYACQUIRE", &name, b"1"])].concat()
            }),
        },
        Style {
            label: "Redisson's semaphore scripts (EVALSHA)",
            commands: &["evalsha"],
            replies: 2,
            pair: Box::new(move |name, _| {
                let name = key(name);
                [
                    scripts.release(&name, 1, false).get_packed_command(),
                    scripts.try_acquire(&name, 1).get_packed_command(),
                ]
                .concat()
            }),
        },
        Style {
            label: "the same effects (`MULTI` `INCRBY`, `PUBLISH` `EXEC`; `DECRBY`)",
            commands: &["multi", "exec", "decrby"],
            replies: 7,
            pair: Box::new(move |name, _| {
                let name = key(name);
                [
                    transaction(&[&[b"INCRBY", &name, b"1"], &[b"PUBLISH", &semaphore_channel(&name), b"1"]]),
                    encode(&[b"DECRBY", &name, b"1"]),
                ]
                .concat()
            }),
        },
    ];
    measure(server, "semaphore: release + acquire", styles)
}

/// The wall clock in ms since the epoch, as Redisson sends `now`.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

fn permit_semaphore(server: &Server) -> Family {
    let scripts = PermitSemaphoreScripts::default();
    scripts.load(&mut server.connection()).unwrap();
    let key = |key: &[u8]| named(b"permits:", key);
    // One permit to take; after the first pair a no-op that writes nothing.
    let set_permits = |name: &[u8]| encode(&[b"RPSEM.TRYSETPERMITS", name, b"1"]);
    // A new 16-byte permit id per pair, as clients make them.
    let id = |unique: u64| format!("{unique:016x}").into_bytes();
    let lease = LEASE_MS.to_string().into_bytes();
    let styles = [
        Style {
            label: "`RPSEM.TRYACQUIRE` + `RPSEM.RELEASE`",
            commands: &["rpsem.tryacquire", "rpsem.release"],
            replies: 4,
            pair: Box::new({
                let lease = lease.clone();
                move |name, unique| {
                    let (name, id) = (key(name), id(unique));
                    [
                        set_permits(&name),
                        encode(&[b"RPSEM.TRYACQUIRE", &name, &lease, &id]),
                        encode(&[b"RPSEM.RELEASE", &name, &id]),
                    ]
                    .concat()
                }
            }),
        },
        Style {
            label: "Redisson's permit-expirable semaphore scripts (EVALSHA)",
            commands: &["evalsha"],
            replies: 4,
            pair: Box::new(move |name, unique| {
                let (name, id, now) = (key(name), id(unique), now_ms());
                [
                    set_permits(&name),
                    scripts.try_acquire(&name, &[&id], Some(LEASE_MS), now).get_packed_command(),
                    scripts.release(&name, &id, now).get_packed_command(),
                ]
                .concat()
            }),
        },
        Style {
            label: "the same effects (`MULTI` `DECRBY`, `ZADD` `EXEC`; `MULTI` `ZREM`, `INCRBY`, `PUBLISH` `EXEC`)",
            commands: &["multi", "exec"],
            replies: 15,
            pair: Box::new(move |name, unique| {
                let (name, id) = (key(name), id(unique));
                let (permits, channel) = (permit_timeout_key(&name), semaphore_channel(&name));
                let expiry = (now_ms() + LEASE_MS).to_string().into_bytes();
                [
                    set_permits(&name),
                    transaction(&[&[b"DECRBY", &name, b"1"], &[b"ZADD", &permits, &expiry, &id]]),
                    transaction(&[&[b"ZREM", &permits, &id], &[b"INCRBY", &name, b"1"], &[b"PUBLISH", &channel, b"1"]]),
                ]
                .concat()
            }),
        },
    ];
    measure(server, "permit-expirable semaphore: acquire + release", styles)
}

fn count_down_latch(server: &Server) -> Family {
    let scripts = LatchScripts::default();
    scripts.load(&mut server.connection()).unwrap();
    let key = |key: &[u8]| named(b"latch:", key);
    let set_count = move |name: &[u8]| encode(&[b"RLATCH.TRYSETCOUNT", name, b"1"]);
    let styles = [
        Style {
            label: "`RLATCH.COUNTDOWN`",
            commands: &["rlatch.countdown"],
            replies: 2,
            pair: Box::new(move |name, _| {
                let name = key(name);
                [set_count(&name), encode(&[b"RLATCH.COUNTDOWN", &name])].concat()
            }),
        },
        Style {
            label: "Redisson's count-down script (EVALSHA)",
            commands: &["evalsha"],
            replies: 2,
            pair: Box::new(move |name, _| {
                let name = key(name);
                [set_count(&name), scripts.count_down(&name).get_packed_command()].concat()
            }),
        },
        Style {
            label: "the same effects (`MULTI` `DEL`, `PUBLISH` `EXEC`)",
            commands: &["multi", "exec"],
            replies: 7,
            pair: Box::new(move |name, _| {
                let name = key(name);
                let channel = count_down_latch_channel(&name);
                [set_count(&name), transaction(&[&[b"DEL", &name], &[b"PUBLISH", &channel, b"0"]])].concat()
            }),
        },
    ];
    measure(server, "count-down latch: count-down (to zero)", styles)
}

fn fenced_lock(server: &Server) -> Family {
    let scripts = FencedScripts::default();
    scripts.load(&mut server.connection()).unwrap();
    let key = |key: &[u8]| named(b"fenced:", key);
    let lease = LEASE_MS.to_string().into_bytes();
    let release = move |name: &[u8]| encode(&[b"RLOCK.RELEASE", name, OWNER]);
    let styles = [
        Style {
            label: "`RFENCED.ACQUIRE`",
            commands: &["rfenced.acquire"],
            replies: 4,
            pair: Box::new({
                let lease = lease.clone();
                move |name, _| {
                    let name = key(name);
                    [encode(&[b"RFENCED.ACQUIRE", &name, OWNER, &lease]), release(&name)].concat()
                }
            }),
        },
        Style {
            label: "Redisson's fenced acquire script (EVALSHA)",
            commands: &["evalsha"],
            replies: 4,
            pair: Box::new(move |name, _| {
                let name = key(name);
                [scripts.acquire(&name, OWNER, LEASE_MS).get_packed_command(), release(&name)].concat()
            }),
        },
        Style {
            label: "the same effects (`MULTI` `INCR`, `HINCRBY`, `PEXPIRE` `EXEC`)",
            commands: &["multi", "exec"],
            replies: 9,
            pair: Box::new(move |name, _| {
                let name = key(name);
                let token = fenced_token_key(&name);
                [
                    transaction(&[&[b"INCR", &token], &[b"HINCRBY", &name, OWNER, b"1"], &[b"PEXPIRE", &name, &lease]]),
                    release(&name),
                ]
                .concat()
            }),
        },
    ];
    measure(server, "fenced lock: acquire (with its token)", styles)
}

/// The semaphore, the permit-expirable semaphore, the count-down latch
/// and the fenced lock.
pub fn run(server: &Server) -> Vec<Family> {
    vec![semaphore(server), permit_semaphore(server), count_down_latch(server), fenced_lock(server)]
}
