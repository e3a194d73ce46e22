//! The version `MODULE LIST` shows: the crate's, as Redis modules number
//! theirs (major * 10000 + minor * 100 + patch: 0.1.0 is 100, 1.2.3 is
//! 10203), so that an operator can tell which build a server loaded.

/// The crate's version as one number (see the module doc).
pub const MODULE_VERSION: i32 =
    number(env!("CARGO_PKG_VERSION_MAJOR"), env!("CARGO_PKG_VERSION_MINOR"), env!("CARGO_PKG_VERSION_PATCH"));

/// `major.minor.patch` as one number; a part too large to fit in two
/// digits (minor, patch) fails the build.
const fn number(major: &str, minor: &str, patch: &str) -> i32 {
    let (minor, patch) = (parse(minor), parse(patch));
    assert!(minor < 100 && patch < 100, "minor and patch must stay below 100 for MODULE LIST");
    parse(major) * 10_000 + minor * 100 + patch
}

const fn parse(digits: &str) -> i32 {
    let bytes = digits.as_bytes();
    let mut value = 0;
    let mut at = 0;
    while at < bytes.len() {
        assert!(bytes[at].is_ascii_digit(), "a version part is not a number");
        value = value * 10 + (bytes[at] - b'0') as i32;
        at += 1;
    }
    value
}

#[cfg(test)]
mod tests {
    use super::{number, MODULE_VERSION};

    #[test]
    fn versions_number_as_redis_modules_do() {
        assert_eq!(number("0", "1", "0"), 100);
        assert_eq!(number("1", "2", "3"), 10_203);
        assert_eq!(number("12", "99", "99"), 129_999);
    }

    #[test]
    fn the_module_version_is_the_crates() {
        let parts: Vec<i32> = env!("CARGO_PKG_VERSION").split('.').map(|part| part.parse().unwrap()).collect();
        assert_eq!(MODULE_VERSION, parts[0] * 10_000 + parts[1] * 100 + parts[2]);
    }
}
