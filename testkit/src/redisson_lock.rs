//! Redisson's RLock script texts of a version, read from its jar (see
//! [`crate::redisson_scripts`]) and told apart by SHA-1: shared by the
//! filter's tests and the benchmark of Redisson's scripts run natively.

use crate::redisson_scripts;

pub const ACQUIRE_SHA: &str = "149c5a8bf18676fd99e9e6e24923bd64d9b62f94";
pub const RELEASE_SHA: &str = "6866459238a13a701d42f4971f12d9f3a50e2442";

/// The newest Redisson tested: its RLock texts are the filter's.
pub const VERSION: &str = "4.7.0";

/// The keys and arguments of a version's unlock text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unlock {
    /// 3.10.6 .. 3.21: KEYS name, channel; ARGV message, lease, owner
    /// (`publish` in the text).
    Plain,
    /// 3.22 .. 3.23: the publish command as the fourth ARGV.
    Publish,
    /// 3.24 ..: and the unlock latch (KEYS[3], latch px as the fifth ARGV).
    Latch,
}

/// A version's RLock texts.
pub struct Scripts {
    pub acquire: Vec<u8>,
    pub release: Vec<u8>,
    pub force: Vec<u8>,
    /// The single-lock renewal (up to 3.43; later ones renew in batches).
    pub renew: Option<Vec<u8>>,
    pub unlock: Unlock,
}

impl Scripts {
    /// Whether the force release takes its publish command as an argument.
    pub fn force_takes_publish(&self) -> bool {
        self.unlock != Unlock::Plain
    }
}

pub fn sha1_hex(text: &[u8]) -> String {
    redis::Script::new(std::str::from_utf8(text).expect("UTF-8 script")).get_hash().to_owned()
}

/// The texts of `classes` (`org/redisson/RedissonLock`, …) of Redisson
/// `version`'s jar.
pub fn all_texts(version: &str, classes: &[&str]) -> Vec<Vec<u8>> {
    classes.iter().flat_map(|class| redisson_scripts(version, class)).collect()
}

/// The texts whose SHA-1s are `shas`, in that order, from the classes of
/// Redisson `version`'s jar.
pub fn texts<const N: usize>(version: &str, classes: &[&str], shas: [&str; N]) -> [Vec<u8>; N] {
    let texts = all_texts(version, classes);
    shas.map(|sha| {
        texts.iter().find(|text| sha1_hex(text) == sha).cloned().unwrap_or_else(|| panic!("{sha} not in {version}"))
    })
}

/// RLock's texts of `version`, found by their SHA-1.
pub fn scripts(version: &str) -> Scripts {
    let mut classes = vec!["org/redisson/RedissonLock"];
    if all_texts(version, &classes).iter().all(|text| sha1_hex(text) != RENEW_SHA) {
        classes.push("org/redisson/RedissonBaseLock");
    }
    let texts = all_texts(version, &classes);
    let find = |shas: &[&str]| texts.iter().find(|text| shas.contains(&sha1_hex(text).as_str())).cloned();
    let unlock =
        [(RELEASE_SHA, Unlock::Latch), (RELEASE_PUBLISH_SHA, Unlock::Publish), (RELEASE_PLAIN_SHA, Unlock::Plain)];
    let (release, unlock) = unlock
        .into_iter()
        .find_map(|(sha, shape)| find(&[sha]).map(|text| (text, shape)))
        .unwrap_or_else(|| panic!("no known unlock text in {version}"));
    let expect = |shas: &[&str]| find(shas).unwrap_or_else(|| panic!("none of {shas:?} in {version}"));
    Scripts {
        acquire: expect(&[ACQUIRE_SHA, ACQUIRE_3_12_SHA]),
        release,
        force: expect(&[FORCE_SHA, FORCE_PLAIN_SHA]),
        renew: find(&[RENEW_SHA]),
        unlock,
    }
}

const ACQUIRE_3_12_SHA: &str = "dad0f8d619e548e04f21fb48d50be5034df3adae";
const RELEASE_PUBLISH_SHA: &str = "778cea8aada230ae060b432fc333adaec85f2f4c";
const RELEASE_PLAIN_SHA: &str = "3ffe249c16dee540ac8ab32e39bd408626b9aff7";
const FORCE_SHA: &str = "605e338249a7a1d40df83b04f7658354f883b41b";
const FORCE_PLAIN_SHA: &str = "7e9c80b3d786b95d5d4aaf8fd73adb9775fa6fb1";
const RENEW_SHA: &str = "8e19a1ddbdee9138df9f32a480c57addab4353d1";
