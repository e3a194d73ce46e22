//! The grammar on tables shaped as the commands' (the commands' own are
//! checked against a server: tests/command_docs.rs).

use super::{explain, syntax_line, Arg, ArgKind, Grammar, Keys, OwnerPlaces};
use redis_module::RedisError;

const OWNER: Arg = Arg { name: c"owner", kind: ArgKind::String, optional: false, token: None };
const LEASE_MS: Arg = Arg { name: c"lease_ms", kind: ArgKind::Integer, optional: true, token: None };
const VIA: Arg = Arg {
    name: c"publisher",
    kind: ArgKind::OneOf(&[Arg::keyword(c"publish", c"PUBLISH"), Arg::keyword(c"spublish", c"SPUBLISH")]),
    optional: true,
    token: Some(c"VIA"),
};
const LATCH: Arg = Arg::block(
    c"latch",
    &[
        Arg { name: c"request_id", kind: ArgKind::String, optional: false, token: Some(c"ID") },
        Arg { name: c"latch_ms", kind: ArgKind::Integer, optional: true, token: Some(c"PX") },
    ],
);
const REPLY_FULL: Arg = Arg::block(c"reply", &[Arg::keyword(c"reply", c"REPLY"), Arg::keyword(c"full", c"FULL")]);

/// A command whose key is argument 1.
const fn keyed(name: &'static std::ffi::CStr, args: &'static [Arg]) -> Grammar<'static> {
    Grammar { name, keys: Keys::First, keyless: false, args }
}

const RELEASE: Grammar = keyed(c"x.release", &[OWNER, LEASE_MS, LATCH, REPLY_FULL, VIA]);
const FORCE: Grammar = keyed(
    c"x.force",
    &[
        Arg {
            name: c"mode",
            optional: true,
            ..Arg { kind: ArgKind::OneOf(&[Arg::keyword(c"read", c"READ"), Arg::keyword(c"write", c"WRITE")]), ..OWNER }
        },
        VIA,
    ],
);
const SET: Grammar = keyed(
    c"x.set",
    &[
        Arg { name: c"permits", kind: ArgKind::Integer, optional: false, token: None },
        Arg::block(
            c"script",
            &[Arg { optional: true, ..Arg::keyword(c"always", c"ALWAYS") }, Arg { optional: false, ..VIA }],
        ),
    ],
);
const IDS: Grammar = keyed(
    c"x.ids",
    &[
        Arg { name: c"id", kind: ArgKind::Multiple(&ArgKind::String), optional: false, token: None },
        Arg {
            optional: true,
            ..Arg {
                name: c"together",
                kind: ArgKind::OneOf(&[Arg::keyword(c"all", c"ALL"), Arg::keyword(c"any", c"ANY")]),
                ..OWNER
            }
        },
        VIA,
    ],
);
const PAIRS: Grammar = Grammar {
    name: c"x.pairs",
    keys: Keys::Pairs,
    keyless: false,
    args: &[
        Arg { optional: false, ..LEASE_MS },
        Arg {
            name: c"lock",
            kind: ArgKind::Repeated(&[Arg { name: c"key", kind: ArgKind::Key, optional: false, token: None }, OWNER]),
            optional: false,
            token: None,
        },
    ],
};
/// A required keyword whose values repeat, after an optional one.
const ITEMS: Grammar = keyed(
    c"x.items",
    &[
        Arg { name: c"t", kind: ArgKind::Integer, optional: true, token: Some(c"AT") },
        Arg { name: c"item", kind: ArgKind::Multiple(&ArgKind::String), optional: false, token: Some(c"ITEMS") },
    ],
);
const LIST: Grammar = Grammar { keyless: true, ..keyed(c"x.list", &[Arg { name: c"key", optional: true, ..OWNER }]) };

#[test]
fn syntax_lines_are_read_from_the_tables() {
    assert!(matches!(IDS.args[0].kind, ArgKind::Multiple(ArgKind::String)), "ids are strings, once or more");
    let table: [(&Grammar, &str); 7] = [
        (&RELEASE, "X.RELEASE key owner [lease_ms] [ID request_id [PX latch_ms]] [REPLY FULL] [VIA PUBLISH|SPUBLISH]"),
        (&FORCE, "X.FORCE key [READ|WRITE] [VIA PUBLISH|SPUBLISH]"),
        (&SET, "X.SET key permits [[ALWAYS] VIA PUBLISH|SPUBLISH]"),
        (&IDS, "X.IDS key id [id ...] [ALL|ANY] [VIA PUBLISH|SPUBLISH]"),
        (&PAIRS, "X.PAIRS lease_ms key owner [key owner ...]"),
        (&LIST, "X.LIST [key]"),
        (&ITEMS, "X.ITEMS key [AT t] ITEMS item [item ...]"),
    ];
    for (grammar, expected) in table {
        assert_eq!(syntax_line(grammar), expected);
    }
}

/// What `explain` makes of a handler's error for this call.
fn explained(grammar: &Grammar, argv: &[&str], handler_said: RedisError) -> String {
    let argv: Vec<&[u8]> = argv.iter().map(|arg| arg.as_bytes()).collect();
    match explain(handler_said, grammar, &argv) {
        RedisError::String(text) => text,
        RedisError::Str(text) => text.to_owned(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_syntax_error_names_the_first_misfit_and_the_grammar() {
    let table: [(&Grammar, &[&str], &str); 19] = [
        (&FORCE, &["X.FORCE", "K", "VAI", "PUBLISH"], "unexpected argument 2 ('VAI')"),
        (&FORCE, &["X.FORCE", "K", "WRITE", "VAI", "PUBLISH"], "unexpected argument 3 ('VAI')"),
        (&FORCE, &["X.FORCE", "K", "VIA", "PUBLISHH"], "unexpected argument 3 ('PUBLISHH')"),
        (&FORCE, &["X.FORCE", "K", "VIA"], "'VIA' needs PUBLISH|SPUBLISH"),
        (&FORCE, &["X.FORCE", "K", "VIA", "PUBLISH", "VIA", "PUBLISH"], "unexpected argument 4 ('VIA')"),
        (&RELEASE, &["X.RELEASE", "K", "o", "ID"], "'ID' needs request_id"),
        (&RELEASE, &["X.RELEASE", "K", "o", "5", "REPLY"], "'REPLY' needs FULL"),
        (&RELEASE, &["X.RELEASE", "K", "o", "5", "6"], "unexpected argument 4 ('6')"),
        (&RELEASE, &["X.RELEASE", "K", "o", "VIA", "NONE"], "unexpected argument 4 ('NONE')"),
        (&SET, &["X.SET", "Q", "5", "ALWAYS"], "'ALWAYS' needs VIA PUBLISH|SPUBLISH"),
        // A block may start past its optional first part.
        (&SET, &["X.SET", "Q", "5", "VIA"], "'VIA' needs PUBLISH|SPUBLISH"),
        (&SET, &["X.SET", "Q", "5", "VIA", "PUBLISH", "ALWAYS"], "unexpected argument 5 ('ALWAYS')"),
        (&SET, &["X.SET", "Q", "5", "VAI", "PUBLISH"], "unexpected argument 3 ('VAI')"),
        (&IDS, &["X.IDS", "Q", "a", "b", "ALL", "ANY"], "unexpected argument 5 ('ANY')"),
        (&PAIRS, &["X.PAIRS", "100", "k1", "o1", "k2"], "'k2' needs owner"),
        (&LIST, &["X.LIST", "a", "b"], "unexpected argument 2 ('b')"),
        (&ITEMS, &["X.ITEMS", "g", "AT", "6"], "ITEMS item [item ...] is missing"),
        (&ITEMS, &["X.ITEMS", "g", "ITEMS"], "'ITEMS' needs item [item ...]"),
        (&ITEMS, &["X.ITEMS", "g", "AT"], "'AT' needs t"),
    ];
    for (grammar, argv, misfit) in table {
        let expected = format!("ERR syntax error: {misfit}; syntax: {}", syntax_line(grammar));
        assert_eq!(explained(grammar, argv, RedisError::WrongArity), expected, "{argv:?}");
    }
}

#[test]
fn a_call_that_fits_keeps_the_handlers_reason_and_other_errors_pass() {
    let reason = RedisError::Str("ERR syntax error: VIA only with AT now_ms");
    let expected = format!("ERR syntax error: VIA only with AT now_ms; syntax: {}", syntax_line(&FORCE));
    assert_eq!(explained(&FORCE, &["X.FORCE", "k", "VIA", "PUBLISH"], reason), expected);
    let fits = format!("ERR syntax error: wrong number of arguments; syntax: {}", syntax_line(&FORCE));
    assert_eq!(explained(&FORCE, &["X.FORCE", "k"], RedisError::WrongArity), fits);
    // Options the handler takes in the table's order only.
    let swapped = explained(&RELEASE, &["X.RELEASE", "k", "o", "VIA", "PUBLISH", "ID", "r"], RedisError::WrongArity);
    let out_of_order = format!(
        "ERR syntax error: options out of order: give them in the order of the syntax; syntax: {}",
        syntax_line(&RELEASE)
    );
    assert_eq!(swapped, out_of_order);
    let not_syntax = RedisError::Str("ERR lease_ms must be a positive integer");
    let text = explained(&RELEASE, &["X.RELEASE", "k", "o", "x"], not_syntax);
    assert_eq!(text, "ERR lease_ms must be a positive integer");
    // Counted keys: the handler's reason stands.
    let numbered = Grammar { keys: Keys::Numbered, ..keyed(c"x.pairs", PAIRS.args) };
    let numbered = explained(&numbered, &["X.PAIRS", "1", "k", "x"], RedisError::WrongArity);
    assert!(numbered.starts_with("ERR syntax error: wrong number of arguments; syntax: X.PAIRS numkeys key [key ...]"));
}

#[test]
fn long_arguments_are_quoted_short_and_escaped() {
    let long = format!("\0{}", "v".repeat(70_000));
    let text = explained(&LIST, &["X.LIST", "K", &long], RedisError::WrongArity);
    let quoted = format!("ERR syntax error: unexpected argument 2 ('\\x00{}...')", "v".repeat(39));
    assert!(text.starts_with(&quoted), "{text}");
}

#[test]
fn owners_are_found_where_the_tables_put_them() {
    let table: [(&Grammar, usize, &[usize]); 6] = [
        (&RELEASE, 3, &[2]),
        (&RELEASE, 4, &[2]),
        (&LIST, 2, &[]),
        (&PAIRS, 6, &[3, 5]),
        (&PAIRS, 2, &[]),
        (&FORCE, 4, &[]),
    ];
    for (grammar, argc, expected) in table {
        let found: Vec<usize> = OwnerPlaces::of(grammar).positions(argc).collect();
        assert_eq!(found, expected, "{:?} of {argc} arguments", grammar.name);
    }
}
