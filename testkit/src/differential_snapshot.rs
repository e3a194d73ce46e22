//! The one snapshot of the differential tests: what keys hold, read at one
//! moment, to compare the twins after a step.

/// Reads type, value and PTTL of each key at one moment: the PTTLs from
/// the absolute expiries and one clock reading (Redis 7.0's PTTL reads the
/// clock anew, so a server descheduled mid-script would skew the twins).
const READ_KEYS: &str = "local out = {} \
    local time = redis.call('time'); local now = time[1] * 1000 + math.floor(time[2] / 1000) \
    for i, key in ipairs(KEYS) do \
        local kind = redis.call('type', key).ok; local value = {} \
        if kind == 'hash' then value = redis.call('hgetall', key) \
        elseif kind == 'string' then value = {redis.call('get', key)} \
        elseif kind == 'zset' then value = redis.call('zrange', key, 0, -1, 'withscores') \
        elseif kind == 'list' then value = redis.call('lrange', key, 0, -1) end \
        local at = redis.call('pexpiretime', key); if at >= 0 then at = math.max(at - now, 0) end \
        out[i] = {kind, value, at} \
    end return out";

/// A key as `"<key> <type> <value>"` (a hash's fields sorted; a zset's
/// members with their scores, a list's items, in order) and its PTTL.
pub type KeyState = (String, i64);

/// Every key of `keys` as [`KeyState`], read at one moment.
pub fn snapshot(con: &mut redis::Connection, keys: &[Vec<u8>]) -> Vec<KeyState> {
    let read: Vec<(String, Vec<Vec<u8>>, i64)> =
        redis::cmd("EVAL").arg(READ_KEYS).arg(keys.len()).arg(keys).query(con).expect("the keys' snapshot");
    keys.iter()
        .zip(read)
        .map(|(key, (kind, value, pttl))| {
            let value: Vec<String> = value.iter().map(|part| String::from_utf8_lossy(part).into_owned()).collect();
            let value = match kind.as_str() {
                "hash" => {
                    let mut fields: Vec<(&String, &String)> =
                        value.chunks(2).map(|pair| (&pair[0], &pair[1])).collect();
                    fields.sort();
                    format!("{fields:?}")
                }
                "zset" | "list" => format!("{value:?}"),
                _ => value.concat(),
            };
            (format!("{} {kind} {value}", String::from_utf8_lossy(key)), pttl)
        })
        .collect()
}

/// Whether two twins' snapshots (keys named alike) are the same, PTTLs
/// within `tolerance_ms`. A key about to expire counts as gone: the twins'
/// expiries may be a millisecond apart (Lua's relative to the script's
/// clock, the module's absolute from its own), and the keys may be read
/// within that millisecond.
pub fn same_snapshots(a: &[KeyState], b: &[KeyState], tolerance_ms: i64) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(a, b)| {
            let close = |x: i64, y: i64| x == y || (x >= 0 && y >= 0 && (x - y).abs() <= tolerance_ms);
            (a.0 == b.0 && close(a.1, b.1)) || expired_early(a, b) || expired_early(b, a)
        })
}

/// Whether `gone` is the key `expiring` about to expire, read as gone.
fn expired_early(gone: &KeyState, expiring: &KeyState) -> bool {
    let key = expiring.0.split(' ').next().unwrap_or_default();
    gone.1 == -2 && gone.0 == format!("{key} none ") && (0..=EXPIRING_MS).contains(&expiring.1)
}

/// A key this close to its expiry may be read as gone on one twin.
const EXPIRING_MS: i64 = 5;
