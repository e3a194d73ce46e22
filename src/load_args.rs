//! Module load arguments: `loadmodule librlock.so [default-lease-ms <ms>]
//! [redisson-scripts native|off] [fencing-token-jump yes|no]
//! [lock-delay-ms <ms>] [stall-ms <ms>] [deadlock-detection yes|no]`.
//!
//! redis-module applies them as configuration defaults without the bounds
//! CONFIG SET enforces (and ignores names it does not know), so the
//! module checks them itself and refuses to load on any bad one.

use crate::lease::parse_lease_ms;

/// `rlock.default-lease-ms` as a name/value pair.
pub const DEFAULT_LEASE_MS: &str = "default-lease-ms";
/// `rlock.redisson-scripts` as a name/value pair.
pub const REDISSON_SCRIPTS: &str = "redisson-scripts";
/// `rlock.fencing-token-jump` as a name/value pair.
pub const FENCING_TOKEN_JUMP: &str = "fencing-token-jump";
/// `rlock.lock-delay-ms` as a name/value pair.
pub const LOCK_DELAY_MS: &str = "lock-delay-ms";
/// `rlock.stall-ms` as a name/value pair.
pub const STALL_MS: &str = "stall-ms";
/// `rlock.deadlock-detection` as a name/value pair.
pub const DEADLOCK_DETECTION: &str = "deadlock-detection";

const KNOWN: &str =
    "default-lease-ms <ms>, redisson-scripts native|off, fencing-token-jump yes|no, lock-delay-ms <ms>, \
                     stall-ms <ms>, deadlock-detection yes|no";
const NAMES: [&str; 6] =
    [DEFAULT_LEASE_MS, REDISSON_SCRIPTS, FENCING_TOKEN_JUMP, LOCK_DELAY_MS, STALL_MS, DEADLOCK_DETECTION];

/// Checks every name/value pair; the error says which argument is wrong
/// and why, for the server log.
pub fn check(args: &[&[u8]]) -> Result<(), String> {
    let mut seen: Vec<&[u8]> = Vec::new();
    args.chunks(2).try_for_each(|pair| {
        check_pair(pair)?;
        // The server would take the first value and drop the rest, silently.
        if seen.contains(&pair[0]) {
            return Err(format!("module argument {} is given twice; give it once", escaped_plain(pair[0])));
        }
        seen.push(pair[0]);
        Ok(())
    })
}

fn check_pair(pair: &[&[u8]]) -> Result<(), String> {
    match pair {
        [name, value] if *name == DEFAULT_LEASE_MS.as_bytes() => parse_lease_ms(value).map(drop).map_err(|err| {
            let why = err.message().trim_start_matches("ERR ").replace("lease_ms", DEFAULT_LEASE_MS);
            format!("module argument {DEFAULT_LEASE_MS} {}: {why}", escaped(value))
        }),
        // 0 turns either off.
        [name, value] if [LOCK_DELAY_MS, STALL_MS].iter().any(|ms| *name == ms.as_bytes()) => match *value {
            b"0" => Ok(()),
            _ => parse_lease_ms(value).map(drop).map_err(|err| {
                let name = escaped_plain(name);
                let why = err.message().trim_start_matches("ERR ").replace("lease_ms", &name);
                let why = why.replace("must be a positive", "must be 0 (off) or a positive");
                format!("module argument {name} {}: {why}", escaped(value))
            }),
        },
        [name, value] if *name == REDISSON_SCRIPTS.as_bytes() => match *value {
            b"native" | b"off" => Ok(()),
            _ => Err(format!("module argument {REDISSON_SCRIPTS} {}: must be native or off", escaped(value))),
        },
        // Either case, as CONFIG SET takes it.
        [name, value] if [FENCING_TOKEN_JUMP, DEADLOCK_DETECTION].iter().any(|yes_no| *name == yes_no.as_bytes()) => {
            match value.eq_ignore_ascii_case(b"yes") || value.eq_ignore_ascii_case(b"no") {
                true => Ok(()),
                false => Err(format!("module argument {} {}: must be yes or no", escaped_plain(name), escaped(value))),
            }
        }
        [name] if NAMES.iter().any(|known| *name == known.as_bytes()) => {
            Err(format!("module argument {} has no value", escaped_plain(name)))
        }
        [name, ..] => Err(format!("unknown module argument {} (known: {KNOWN})", escaped(name))),
        [] => Ok(()),
    }
}

fn escaped_plain(arg: &[u8]) -> String {
    arg.escape_ascii().to_string()
}

fn escaped(arg: &[u8]) -> String {
    format!("\"{}\"", arg.escape_ascii())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_arguments_are_checked_by_the_table() {
        type Case<'a> = (&'a [&'a [u8]], Result<(), &'a str>);
        let cases: &[Case] = &[
            (&[], Ok(())),
            (&[b"default-lease-ms", b"5000"], Ok(())),
            (&[b"default-lease-ms", b"31536000000"], Ok(())),
            (
                &[b"default-lease-ms", b"0"],
                Err("module argument default-lease-ms \"0\": default-lease-ms must be a positive integer"),
            ),
            (
                &[b"default-lease-ms", b"-5000"],
                Err("module argument default-lease-ms \"-5000\": default-lease-ms must be a positive integer"),
            ),
            (
                &[b"default-lease-ms", b"9223372036854775807"],
                Err("module argument default-lease-ms \"9223372036854775807\": default-lease-ms is above the maximum of 31536000000 (365 days)"),
            ),
            (
                &[b"default-lease-ms", b"99999999999999"],
                Err("module argument default-lease-ms \"99999999999999\": default-lease-ms is above the maximum of 31536000000 (365 days)"),
            ),
            (&[b"default-lease-ms"], Err("module argument default-lease-ms has no value")),
            (&[b"redisson-scripts", b"native"], Ok(())),
            (&[b"redisson-scripts", b"off", b"default-lease-ms", b"5000"], Ok(())),
            (
                &[b"redisson-scripts", b"lua"],
                Err("module argument redisson-scripts \"lua\": must be native or off"),
            ),
            (&[b"redisson-scripts"], Err("module argument redisson-scripts has no value")),
            (&[b"fencing-token-jump", b"no"], Ok(())),
            (&[b"deadlock-detection", b"No"], Ok(())),
            (&[b"deadlock-detection", b"0"], Err("module argument deadlock-detection \"0\": must be yes or no")),
            (&[b"fencing-token-jump", b"YES"], Ok(())),
            (&[b"fencing-token-jump", b"yes", b"redisson-scripts", b"off"], Ok(())),
            (
                &[b"fencing-token-jump", b"off"],
                Err("module argument fencing-token-jump \"off\": must be yes or no"),
            ),
            (&[b"fencing-token-jump"], Err("module argument fencing-token-jump has no value")),
            (
                &[b"fencing-token-jump", b"no", b"fencing-token-jump", b"yes"],
                Err("module argument fencing-token-jump is given twice; give it once"),
            ),
            (
                &[b"redisson-scripts", b"off", b"default-lease-ms", b"5000", b"redisson-scripts", b"off"],
                Err("module argument redisson-scripts is given twice; give it once"),
            ),
            (&[b"lock-delay-ms", b"0"], Ok(())),
            (&[b"lock-delay-ms", b"5000"], Ok(())),
            (
                &[b"lock-delay-ms", b"-1"],
                Err("module argument lock-delay-ms \"-1\": lock-delay-ms must be 0 (off) or a positive integer"),
            ),
            (
                &[b"lock-delay-ms", b"31536000001"],
                Err("module argument lock-delay-ms \"31536000001\": lock-delay-ms is above the maximum of 31536000000 (365 days)"),
            ),
            (&[b"lock-delay-ms"], Err("module argument lock-delay-ms has no value")),
            (&[b"stall-ms", b"0"], Ok(())),
            (&[b"stall-ms", b"500"], Ok(())),
            (&[b"stall-ms", b"-1"], Err("module argument stall-ms \"-1\": stall-ms must be 0 (off) or a positive integer")),
            (&[b"bogus", b"5"], Err("unknown module argument \"bogus\" (known: default-lease-ms <ms>, redisson-scripts native|off, fencing-token-jump yes|no, lock-delay-ms <ms>, stall-ms <ms>, deadlock-detection yes|no)")),
            (
                &[b"default-lease-ms", b"5000", b"default-lease-ms", b"0"],
                Err("module argument default-lease-ms \"0\": default-lease-ms must be a positive integer"),
            ),
            (
                &[b"default-lease-ms", b"5000", b"x\x00"],
                Err("unknown module argument \"x\\x00\" (known: default-lease-ms <ms>, redisson-scripts native|off, fencing-token-jump yes|no, lock-delay-ms <ms>, stall-ms <ms>, deadlock-detection yes|no)"),
            ),
        ];
        for (args, expected) in cases {
            assert_eq!(check(args), expected.map_err(str::to_owned), "{args:?}");
        }
    }
}
