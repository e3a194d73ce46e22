//! Redisson's script texts, read at test time from its jar in the local
//! Maven repository (never copied into this repository): the string
//! constants of a class file that call `redis.call`.

use std::path::PathBuf;
use std::process::Command;

/// The scripts in `class` (e.g. `org/redisson/RedissonLock`) of Redisson
/// `version`, in constant-pool order. Fetches the jar with Maven when the
/// local repository lacks it.
pub fn redisson_scripts(version: &str, class: &str) -> Vec<Vec<u8>> {
    redisson_class_scripts(version, class).unwrap_or_else(|| panic!("{class} not in Redisson {version}"))
}

/// The same, or `None` when that version has no such class.
pub fn redisson_class_scripts(version: &str, class: &str) -> Option<Vec<Vec<u8>>> {
    let jar = jar_path(version);
    if !jar.exists() {
        let artifact = format!("-Dartifact=org.redisson:redisson:{version}");
        // The jar alone: its test-scoped dependencies (jmockit) need not be served.
        let status =
            Command::new("mvn").args(["-B", "-q", "-ntp", "dependency:get", "-Dtransitive=false", &artifact]).status();
        assert!(matches!(status, Ok(s) if s.success()), "cannot fetch Redisson {version} with Maven");
    }
    let output = Command::new("unzip").arg("-p").arg(&jar).arg(format!("{class}.class")).output().expect("unzip");
    (output.status.success() && !output.stdout.is_empty())
        .then(|| string_constants(&output.stdout).into_iter().filter(|text| contains(text, b"redis.call")).collect())
}

fn jar_path(version: &str) -> PathBuf {
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    PathBuf::from(home).join(format!(".m2/repository/org/redisson/redisson/{version}/redisson-{version}.jar"))
}

fn contains(text: &[u8], part: &[u8]) -> bool {
    text.windows(part.len()).any(|window| window == part)
}

/// The `CONSTANT_String` values of a class file (JVMS §4.4), decoded from
/// modified UTF-8 (only its encoded NUL differs for these texts).
fn string_constants(class: &[u8]) -> Vec<Vec<u8>> {
    let u16_at = |i: usize| usize::from(u16::from_be_bytes([class[i], class[i + 1]]));
    let count = u16_at(8);
    let mut utf8 = vec![None; count];
    let mut strings = vec![];
    let (mut i, mut index) = (10, 1);
    while index < count {
        let tag = class[i];
        i += match tag {
            1 => {
                let len = u16_at(i + 1);
                utf8[index] = Some(&class[i + 3..i + 3 + len]);
                3 + len
            }
            8 => {
                strings.push(u16_at(i + 1));
                3
            }
            7 | 16 | 19 | 20 => 3,
            15 => 4,
            3 | 4 | 9 | 10 | 11 | 12 | 17 | 18 => 5,
            5 | 6 => {
                index += 1;
                9
            }
            _ => panic!("unknown constant pool tag {tag}"),
        };
        index += 1;
    }
    strings
        .into_iter()
        .filter_map(|at| utf8[at])
        .map(|text| {
            let mut out = Vec::with_capacity(text.len());
            let mut k = 0;
            while k < text.len() {
                if text[k..].starts_with(&[0xc0, 0x80]) {
                    out.push(0);
                    k += 2;
                } else {
                    out.push(text[k]);
                    k += 1;
                }
            }
            out
        })
        .collect()
}
