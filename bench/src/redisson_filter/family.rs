//! Section 9's other lock-family pairs: each primitive's Redisson texts,
//! found by SHA-1, as Lua and natively.

use super::*;

pub(super) const FAMILY_PAIRS: &str = "\
The other primitives' scripts, read from Redisson's jar and found by SHA-1, sent as Redisson sends
them (`EVALSHA`, the keys and channels it derives from the name, the owner above, lease 30000,
`publish`, a fresh unlock latch key per release with a 20000 ms latch), one pair per primitive on
fresh names: the fair lock's `lock()` (`tryLockInnerAsync` with Redisson's default fair wait,
300000 ms, and the caller's clock as `now`) and `unlock()`; the read lock's acquire and release;
the semaphore's `tryAcquire(1)` and `release(1)`, its key set to 1 permit before each row by
Redisson's `trySetPermits(1)` (in the row's mode, not counted: a permit count written by Lua is
an integer-encoded string, which the first native read copies into a raw one, about 1,200
instructions once per key); the count-down latch's `trySetCount(1)` and `countDown()` (which
deletes the key, so every pair starts from none); the fenced lock's `lockAndGetToken()` and the
unlock it shares with RLock. Measured as the rows above (same connections and batch size, each
row on an emptied database, an unmeasured pass, then five passes with the rows taking turns,
medians), 30,000 pairs a row. With the filter `native`, server time is that of the native
commands the calls became; every row checks that `INFO rlock`'s `rlock_redisson_native_<family>`
counters grew by exactly one per call with the filter `native`, and not at all with it `off`.
";

// Redisson 4.7.0's texts of each pair, by SHA-1.
const FAIR_LOCK_SHA: &str = "8f6ed299ffd259f0539c20f89253998c0777ea75";
const FAIR_UNLOCK_SHA: &str = "367f80bd2e300e411fb0936d9b601e5bcb3fd4b6";
const READ_LOCK_SHA: &str = "95553a6ff11176c18e71344e89d116b06fd6f753";
const READ_UNLOCK_SHA: &str = "6e1b10e11ac0a3ed8e902562ecd32ce01b553039";
const SEMAPHORE_TRY_ACQUIRE_SHA: &str = "c7dc9d189c1715465a31a06ddbc008585e0c20be";
const SEMAPHORE_RELEASE_SHA: &str = "ae27582488dd01f4e238cc0733a12146d410eb44";
const SEMAPHORE_TRY_SET_PERMITS_SHA: &str = "241ce4e87e652b4f9b39d33cbcd7df9ee8ed906c";
const LATCH_TRY_SET_COUNT_SHA: &str = "2a52d54a6f35bc8af5e84a2930b2ca1aa2a15892";
const LATCH_COUNT_DOWN_SHA: &str = "38060fab26b0e7c5982a5cfd7ad542e44d3da19b";
const FENCED_LOCK_SHA: &str = "49babb5a1e6a0c5f188c2ae62b93b51cdfd63e45";

/// Pipelined batches per connection in each family row (half the lock
/// pair's): 10 rows over four passes stay within about half a minute.
const FAMILY_BATCHES: usize = 150;

/// One of the family's operation pairs.
struct OpPair<'a> {
    name: &'static str,
    /// The native commands the filter turns the pair into.
    commands: &'static [&'static str],
    counted: &'static [(&'static str, &'static [&'static str])],
    replies: usize,
    setup: Option<Setup>,
    #[allow(clippy::type_complexity)]
    pair: Box<dyn Fn(&[u8], u64) -> Vec<u8> + Sync + 'a>,
}

/// The family's pairs, Lua and native. Returns the table and the lowest
/// server-time and server-CPU ratios.
pub(super) fn family_pairs(server: &Server) -> (Table, (Lowest, Lowest), Result<instructions::PairCounts, String>) {
    let text = |class: &str, shas: [&str; 2]| texts(VERSION, &[&format!("org/redisson/{class}")], shas);
    let fair = text("RedissonFairLock", [FAIR_LOCK_SHA, FAIR_UNLOCK_SHA]);
    let read = text("RedissonReadLock", [READ_LOCK_SHA, READ_UNLOCK_SHA]);
    let semaphore = texts(
        VERSION,
        &["org/redisson/RedissonSemaphore"],
        [SEMAPHORE_TRY_ACQUIRE_SHA, SEMAPHORE_RELEASE_SHA, SEMAPHORE_TRY_SET_PERMITS_SHA],
    );
    let latch = text("RedissonCountDownLatch", [LATCH_TRY_SET_COUNT_SHA, LATCH_COUNT_DOWN_SHA]);
    let fenced = texts(VERSION, &["org/redisson/RedissonFencedLock"], [FENCED_LOCK_SHA]);
    let unlock = scripts(VERSION).release;
    let unlock_sha = sha1_hex(&unlock);
    let all_texts = [&fair[0], &fair[1], &read[0], &read[1], &semaphore[0], &semaphore[1], &latch[0], &latch[1]];
    let all_texts = [&all_texts[..], &[&semaphore[2], &fenced[0], &unlock]].concat();
    load(server, &all_texts);
    let lease = LEASE_MS.to_string();
    let latch_ms = rlock_protocol::DEFAULT_LATCH_MS.to_string();
    let wait = DEFAULT_FAIR_WAIT_MS.to_string();
    let (lease, latch_ms, wait) = (lease.as_bytes(), latch_ms.as_bytes(), wait.as_bytes());
    let latch_key = |key: &[u8], unique: u64| unlock_latch_key(key, request_id(unique).as_bytes());
    let pairs = [
        OpPair {
            name: "fair lock: `lock()` + `unlock()`",
            commands: &["rfair.acquire", "rfair.release"],
            counted: &[("fair", &["rfair.acquire", "rfair.release"])],
            replies: 2,
            setup: None,
            pair: Box::new(|key, unique| {
                let (queue, deadlines, channel) = (fair_queue_key(key), fair_timeout_key(key), release_channel(key));
                let now = now_ms().to_string();
                let now = now.as_bytes();
                [
                    evalsha(FAIR_LOCK_SHA, &[key, &queue, &deadlines], &[lease, OWNER, wait, now]),
                    evalsha(
                        FAIR_UNLOCK_SHA,
                        &[key, &queue, &deadlines, &channel, &latch_key(key, unique)],
                        &[b"0", lease, OWNER, now, b"publish", latch_ms],
                    ),
                ]
                .concat()
            }),
        },
        OpPair {
            name: "read lock: acquire + release",
            commands: &["rrw.acquire", "rrw.release"],
            counted: &[("rwlock", &["rrw.acquire", "rrw.release"])],
            replies: 2,
            setup: None,
            pair: Box::new(|key, unique| {
                let holds = rwlock_timeout_prefix(key, OWNER);
                [
                    evalsha(READ_LOCK_SHA, &[key, &holds], &[lease, OWNER, &rwlock_write_field(OWNER)]),
                    evalsha(
                        READ_UNLOCK_SHA,
                        &[key, &rwlock_channel(key), &holds, &rwlock_key_prefix(key), &latch_key(key, unique)],
                        &[b"0", OWNER, b"publish", latch_ms],
                    ),
                ]
                .concat()
            }),
        },
        OpPair {
            name: "semaphore: `tryAcquire()` + `release()`",
            commands: &["rsem.tryacquire", "rsem.release"],
            counted: &[("semaphore", &["rsem.tryacquire", "rsem.release"])],
            replies: 2,
            setup: Some(|key| {
                evalsha(SEMAPHORE_TRY_SET_PERMITS_SHA, &[key, &semaphore_channel(key)], &[b"1", b"publish"])
            }),
            pair: Box::new(|key, _| {
                [
                    evalsha(SEMAPHORE_TRY_ACQUIRE_SHA, &[key], &[b"1"]),
                    evalsha(SEMAPHORE_RELEASE_SHA, &[key, &semaphore_channel(key)], &[b"1", b"publish"]),
                ]
                .concat()
            }),
        },
        OpPair {
            name: "count-down latch: `trySetCount(1)` + `countDown()`",
            commands: &["rlatch.trysetcount", "rlatch.countdown"],
            counted: &[("latch", &["rlatch.trysetcount", "rlatch.countdown"])],
            replies: 2,
            setup: None,
            pair: Box::new(|key, _| {
                let channel = count_down_latch_channel(key);
                [
                    evalsha(LATCH_TRY_SET_COUNT_SHA, &[key, &channel], &[b"1", b"1", b"publish"]),
                    evalsha(LATCH_COUNT_DOWN_SHA, &[key, &channel], &[b"0", b"publish"]),
                ]
                .concat()
            }),
        },
        OpPair {
            name: "fenced lock: `lockAndGetToken()` + `unlock()` (RLock's)",
            commands: &["rfenced.acquire", "rlock.release"],
            counted: &[("fenced", &["rfenced.acquire"]), ("lock", &["rlock.release"])],
            // The acquire replies `[-1, token]`: three lines.
            replies: 4,
            setup: None,
            pair: Box::new(|key, unique| {
                let (channel, latch) = (release_channel(key), latch_key(key, unique));
                [
                    evalsha(FENCED_LOCK_SHA, &[key, &fenced_token_key(key)], &[lease, OWNER]),
                    evalsha(&unlock_sha, &[key, &channel, &latch], &[b"0", lease, OWNER, b"publish", latch_ms]),
                ]
                .concat()
            }),
        },
    ];
    let rows: Vec<Row> = pairs
        .iter()
        .flat_map(|op| {
            [("off", &["evalsha"][..]), ("native", op.commands)].map(|(mode, commands)| {
                let pair = &op.pair;
                Row {
                    mode,
                    style: Style {
                        label: op.name,
                        commands,
                        replies: op.replies,
                        pair: Box::new(move |k, u| pair(k, u)),
                    },
                    counted: op.counted,
                    setup: op.setup,
                }
            })
        })
        .collect();
    let medians = measure_rows(server, &rows, FAMILY_BATCHES);
    let counts = instructions::count_rows(&rows, &all_texts)
        .map(|counts| pairs.iter().zip(counts.chunks(2)).map(|(op, c)| (op.name, [c[0], c[1]])).collect());
    let mut table = Table::new(&[&["Redisson's pair", "filter"], &PAIR_COLUMNS[..]].concat());
    let (mut lowest_time, mut lowest_cpu): (Lowest, Lowest) = ((f64::INFINITY, ""), (f64::INFINITY, ""));
    for (op, [lua, native]) in pairs.iter().zip(medians.chunks(2).map(|m| [m[0], m[1]])) {
        let [lua_usec, lua_cpu, lua_rate] = lua;
        for (mode, [usec, cpu, rate]) in [("`off` (Lua)", lua), ("`native`", native)] {
            table.row(vec![
                op.name.into(),
                mode.into(),
                format!("{usec:.2}"),
                ratio(lua_usec, usec),
                format!("{cpu:.2}"),
                ratio(lua_cpu, cpu),
                format!("{rate:.0}"),
                ratio(rate, lua_rate),
            ]);
        }
        if lua_usec / native[0] < lowest_time.0 {
            lowest_time = (lua_usec / native[0], op.name);
        }
        if lua_cpu / native[1] < lowest_cpu.0 {
            lowest_cpu = (lua_cpu / native[1], op.name);
        }
    }
    (table, (lowest_time, lowest_cpu), counts)
}
