//! The filter's table of Redisson's texts (each primitive's
//! `src/<primitive>/redisson.rs`) checked against Redisson's jars: every
//! entry's SHA-1 and length are those of a text that each class named in
//! its comment sends in every tested release of the range given there
//! (and in the range's first release when no tested one is inside it),
//! and in no tested release outside it. The tested releases are the
//! Makefile's `REDISSON_VERSIONS`.

mod redisson_support;

use redisson_support::sha1_hex;
use std::path::Path;
use testkit::redisson_class_scripts;

type Version = (u32, u32, u32);

/// One table entry: its text, and who sends it when.
#[derive(Debug)]
struct Claim {
    file: String,
    sha1: String,
    len: usize,
    /// (class under org/redisson, first release, last release)
    senders: Vec<(String, Version, Version)>,
}

fn version(text: &str) -> Version {
    let parts: Vec<u32> = text.trim().split('.').map(|part| part.parse().expect("a release number")).collect();
    let [major, minor, patch] = parts[..] else { panic!("release {text:?}") };
    (major, minor, patch)
}

fn release(version: Version) -> String {
    format!("{}.{}.{}", version.0, version.1, version.2)
}

/// `RedissonLock.unlockInnerAsync, 3.10.6 .. 3.21.3; RedissonSpinLock.…`
fn senders(comment: &str) -> Vec<(String, Version, Version)> {
    comment
        .split(';')
        .map(|sender| {
            let (method, range) = sender.split_once(',').unwrap_or_else(|| panic!("no range in {comment:?}"));
            let class = method.trim().rsplit_once('.').expect("Class.method").0.to_owned();
            let (first, last) = range.split_once("..").unwrap_or_else(|| panic!("no range in {comment:?}"));
            (class, version(first), version(last))
        })
        .collect()
}

/// Every `Known { sha1: …, len: … }` under `src`, with the comment above it.
fn claims(dir: &Path, claims: &mut Vec<Claim>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            self::claims(&path, claims);
        } else if path.file_name().is_some_and(|name| name == "redisson.rs") {
            let source = std::fs::read_to_string(&path).unwrap();
            let mut comment = String::new();
            for line in source.lines().map(str::trim) {
                if let Some(text) = line.strip_prefix("// ") {
                    comment = text.to_owned();
                } else if let Some(rest) = line.strip_prefix("Known { sha1: \"") {
                    let (sha1, rest) = rest.split_once('"').unwrap();
                    let len = rest.split("len: ").nth(1).and_then(|n| n.split(',').next()).expect("len on the line");
                    let file = path.display().to_string();
                    let claim =
                        Claim { file, sha1: sha1.to_owned(), len: len.parse().unwrap(), senders: senders(&comment) };
                    claims.push(claim);
                }
            }
        }
    }
}

fn tested_versions() -> Vec<Version> {
    let makefile = include_str!("../Makefile");
    let line = makefile.lines().find_map(|line| line.strip_prefix("REDISSON_VERSIONS ?=")).expect("REDISSON_VERSIONS");
    line.split_whitespace().map(version).collect()
}

#[test]
fn every_text_the_filter_claims_is_the_one_redisson_sends() {
    let mut table = vec![];
    claims(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src")), &mut table);
    assert!(table.len() >= 8, "the table: {table:?}");
    let tested = tested_versions();
    for claim in &table {
        for (class, first, last) in &claim.senders {
            let inside = tested.iter().filter(|v| (first..=last).contains(v)).count();
            let extra = (inside == 0).then_some(*first);
            for version in tested.iter().copied().chain(extra) {
                let texts = redisson_class_scripts(&release(version), &format!("org/redisson/{class}"));
                let sent = texts.iter().flatten().find(|text| sha1_hex(text) == claim.sha1);
                let context = format!("{} ({}) in {class} of {}", claim.sha1, claim.file, release(version));
                if (first..=last).contains(&&version) {
                    let text = sent.unwrap_or_else(|| panic!("{context}: not sent"));
                    assert_eq!(text.len(), claim.len, "{context}: length");
                } else {
                    assert!(sent.is_none(), "{context}: sent outside its range");
                }
            }
        }
    }
}
