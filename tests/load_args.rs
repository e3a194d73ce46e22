//! Module load arguments: a bad one makes the server refuse the module
//! (and so refuse to start), with a log line that says which and why;
//! good ones still work.

use redis::Value;
use testkit::{Server, ServerBuilder};

/// `CONFIG GET rlock.<name>`'s value.
fn setting(con: &mut redis::Connection, name: &str) -> String {
    let pair: Vec<String> = redis::cmd("CONFIG").arg("GET").arg(format!("rlock.{name}")).query(con).unwrap();
    pair[1].clone()
}

fn with_args(args: &[&str]) -> ServerBuilder {
    args.iter().fold(Server::builder(), |builder, arg| builder.module_arg(arg))
}

#[test]
fn bad_load_arguments_refuse_the_module_and_say_why() {
    const NOT_POSITIVE: &str = "default-lease-ms must be a positive integer";
    const TOO_LONG: &str = "default-lease-ms is above the maximum of 31536000000 (365 days)";
    let cases: [(&[&str], &str); 11] = [
        // Every owner would take a lock held by another: no exclusion.
        (&["default-lease-ms", "0"], NOT_POSITIVE),
        (&["default-lease-ms", "-5000"], NOT_POSITIVE),
        // now + lease overflows.
        (&["default-lease-ms", "9223372036854775807"], TOO_LONG),
        // A 3,000-year lease.
        (&["default-lease-ms", "99999999999999"], TOO_LONG),
        (
            &["bogus", "5"],
            "unknown module argument \"bogus\" (known: default-lease-ms <ms>, redisson-scripts native|off, fencing-token-jump yes|no, lock-delay-ms <ms>, stall-ms <ms>, deadlock-detection yes|no)",
        ),
        (&["fencing-token-jump", "off"], "module argument fencing-token-jump \"off\": must be yes or no"),
        // The server would keep the first value, silently.
        (&["fencing-token-jump", "no", "fencing-token-jump", "yes"], "fencing-token-jump is given twice; give it once"),
        (&["default-lease-ms"], "module argument default-lease-ms has no value"),
        (&["lock-delay-ms", "-1"], "lock-delay-ms \"-1\": lock-delay-ms must be 0 (off) or a positive integer"),
        (&["lock-delay-ms", "31536000001"], "lock-delay-ms is above the maximum of 31536000000 (365 days)"),
        (&["default-lease-ms", "5000", "default-lease-ms", "0"], NOT_POSITIVE),
    ];
    for (args, why) in cases {
        let log = with_args(args).start_expecting_failure();
        let line = log.lines().find(|line| line.contains("rlock refuses to load")).unwrap_or_else(|| {
            panic!("{args:?}: no refusal in the log:\n{log}");
        });
        assert!(line.contains(why), "{args:?}: the log line should say {why:?}: {line}");
    }
    // Not an integer: redis-module's own parsing refuses it first.
    let log = with_args(&["default-lease-ms", "abc"]).start_expecting_failure();
    assert!(log.contains("invalid digit found in string"), "{log}");
}

#[test]
fn good_load_arguments_still_work() {
    for (args, lease) in [
        (&[][..], 30_000),
        (&["default-lease-ms", "5000"][..], 5000),
        (&["default-lease-ms", "31536000000"][..], 31_536_000_000),
    ] {
        let server = with_args(args).start();
        let mut con = server.connection();
        assert_eq!(setting(&mut con, "default-lease-ms"), lease.to_string(), "{args:?}");
        let reply: Value = redis::cmd("RLOCK.ACQUIRE").arg(&["k", "a"]).query(&mut con).unwrap();
        assert_eq!(reply, Value::Nil);
        let contended: Value = redis::cmd("RLOCK.ACQUIRE").arg(&["k", "b"]).query(&mut con).unwrap();
        assert!(matches!(contended, Value::Int(ttl) if ttl > lease - 1000), "{args:?}: {contended:?}");
    }
}

#[test]
fn the_fencing_token_jump_is_on_by_default_and_set_by_argument_or_config() {
    for (args, on) in [(&[][..], "yes"), (&["fencing-token-jump", "no"][..], "no")] {
        let server = with_args(args).start();
        let mut con = server.connection();
        assert_eq!(setting(&mut con, "fencing-token-jump"), on, "{args:?}");
        let token = |con: &mut redis::Connection, owner: &str| {
            let pair: (i64, i64) = redis::cmd("RFENCED.ACQUIRE").arg(&["f", owner]).query(con).unwrap();
            pair.1
        };
        let first = token(&mut con, "a");
        assert_eq!(first > 1_000_000_000_000_000, on == "yes", "{args:?}: first token {first}");
        let _: () = redis::cmd("CONFIG").arg(&["SET", "rlock.fencing-token-jump", "no"]).query(&mut con).unwrap();
        assert_eq!(token(&mut con, "a"), first + 1, "no floor: the next one");
    }
}

#[test]
fn lock_delay_is_off_by_default_and_set_by_argument_or_config() {
    for (args, delay) in [(&[][..], "0"), (&["lock-delay-ms", "600000"][..], "600000")] {
        let server = with_args(args).start();
        let mut con = server.connection();
        assert_eq!(setting(&mut con, "lock-delay-ms"), delay, "{args:?}");
        let reply: Value = redis::cmd("RLOCK.ACQUIRE").arg(&["k", "a"]).query(&mut con).unwrap();
        assert_eq!(reply == Value::Nil, delay == "0", "{args:?}: {reply:?}");
        let refused = redis::cmd("CONFIG").arg(&["SET", "rlock.lock-delay-ms", "-1"]).query::<()>(&mut con);
        assert!(refused.is_err(), "CONFIG SET keeps the bounds");
        let _: () = redis::cmd("CONFIG").arg(&["SET", "rlock.lock-delay-ms", "0"]).query(&mut con).unwrap();
        let reply: Value = redis::cmd("RLOCK.ACQUIRE").arg(&["k", "a"]).query(&mut con).unwrap();
        assert_eq!(reply, Value::Nil, "{args:?}: off, granted");
    }
}
