//! The filter's table of Redisson's texts (each primitive's
//! `src/<primitive>/redisson.rs`) checked against Redisson's jars: every
//! entry's SHA-1 and length are those of a text that each class named in
//! its comment sends in every tested release of the range given there
//! (or in one of the Makefile's `REDISSON_TEXT_VERSIONS` when no tested
//! one is inside it), and in no tested release outside it. The tested
//! releases are the Makefile's `REDISSON_VERSIONS`.

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
/// (a method may carry `#2`: the second text it sends).
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
            let (mut comment, mut in_comment) = (String::new(), false);
            let mut lines = source.lines().map(str::trim);
            while let Some(line) = lines.next() {
                if let Some(text) = line.strip_prefix("// ") {
                    if !in_comment {
                        comment.clear();
                    }
                    comment.push_str(text);
                    comment.push(' ');
                    in_comment = true;
                    continue;
                }
                in_comment = false;
                let Some((_, rest)) = line.split_once("sha1: \"") else { continue };
                let sha1 = rest.split('"').next().unwrap().to_owned();
                let mut rest = rest.to_owned();
                while !rest.contains("len: ") {
                    rest = lines.next().expect("len after sha1").to_owned();
                }
                let len = rest.split("len: ").nth(1).and_then(|n| n.split(',').next()).unwrap().parse().unwrap();
                let file = path.display().to_string();
                claims.push(Claim { file, sha1, len, senders: senders(&without_notes(&comment)) });
            }
        }
    }
}

/// A comment without its notes in parentheses.
fn without_notes(comment: &str) -> String {
    let mut depth = 0;
    comment
        .chars()
        .filter(|&c| {
            depth += i32::from(c == '(');
            let keep = depth == 0;
            depth -= i32::from(c == ')');
            keep
        })
        .collect()
}

/// The releases a Makefile variable lists.
fn makefile_versions(variable: &str) -> Vec<Version> {
    let makefile = include_str!("../Makefile");
    let line = makefile.lines().find_map(|line| line.strip_prefix(variable)).expect(variable);
    line.split_whitespace().map(version).collect()
}

#[test]
fn every_text_the_filter_claims_is_the_one_redisson_sends() {
    let mut table = vec![];
    claims(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src")), &mut table);
    assert!(table.len() >= 8, "the table: {table:?}");
    let tested = makefile_versions("REDISSON_VERSIONS ?=");
    let more = makefile_versions("REDISSON_TEXT_VERSIONS :=");
    for claim in &table {
        for (class, first, last) in &claim.senders {
            let inside = |v: &&Version| (first..=last).contains(v);
            let extra = match tested.iter().any(|v| inside(&v)) {
                true => None,
                false => Some(*more.iter().find(inside).unwrap_or_else(|| {
                    panic!(
                        "{}: add a release of {}..{} to REDISSON_TEXT_VERSIONS",
                        claim.sha1,
                        release(*first),
                        release(*last)
                    )
                })),
            };
            for version in tested.iter().copied().chain(extra) {
                let texts = redisson_class_scripts(&release(version), &format!("org/redisson/{class}"));
                let sent = texts.iter().flatten().find(|text| sha1_hex(text) == claim.sha1);
                let context = format!("{} ({}) in {class} of {}", claim.sha1, claim.file, release(version));
                let sends = |(other, first, last): &(String, Version, Version)| {
                    other == class && (first..=last).contains(&&version)
                };
                if claim.senders.iter().any(sends) {
                    let text = sent.unwrap_or_else(|| panic!("{context}: not sent"));
                    assert_eq!(text.len(), claim.len, "{context}: length");
                } else {
                    assert!(sent.is_none(), "{context}: sent outside its range");
                }
            }
        }
    }
}

/// The classes of Redisson 4.7.0's lock family (the lock, its spin,
/// non-reentrant, fair and fenced forms, the read-write lock, the
/// semaphores, the count-down latch, and the watchdog's batch renewals).
const LOCK_FAMILY_4_7: [&str; 13] = [
    "RedissonLock",
    "RedissonSpinLock",
    "RedissonNonReentrantLock",
    "RedissonFairLock",
    "RedissonFencedLock",
    "RedissonReadLock",
    "RedissonWriteLock",
    "RedissonSemaphore",
    "RedissonPermitExpirableSemaphore",
    "RedissonCountDownLatch",
    "renewal/LockTask",
    "renewal/ReadLockTask",
    "renewal/FastMultilockTask",
];

#[test]
fn every_lock_family_text_of_redisson_4_7_runs_natively() {
    let mut table = vec![];
    claims(Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src")), &mut table);
    let mut texts: Vec<(String, &str)> = vec![];
    for class in LOCK_FAMILY_4_7 {
        let sent =
            redisson_class_scripts("4.7.0", &format!("org/redisson/{class}")).unwrap_or_else(|| panic!("{class}"));
        for text in sent {
            let sha1 = sha1_hex(&text);
            if !texts.iter().any(|(known, _)| *known == sha1) {
                texts.push((sha1, class));
            }
        }
    }
    assert_eq!(texts.len(), 44, "Redisson 4.7.0's lock-family texts: {texts:?}");
    let lua: Vec<String> = texts
        .iter()
        .filter(|(sha1, _)| !table.iter().any(|claim| claim.sha1 == *sha1))
        .map(|(sha1, class)| format!("{sha1} ({class})"))
        .collect();
    assert!(lua.is_empty(), "texts of Redisson 4.7.0 still run as Lua: {lua:#?}");
}
