//! The index of the known texts: a call's text found by its SHA-1 (an
//! `EVALSHA`) or by its body (an `EVAL`), with no text hashed or digest
//! decoded that cannot be a known one.

use super::{Family, Known};
use crate::primitive;
use std::sync::OnceLock;

/// The text whose SHA-1 is `sha` (EVALSHA takes it in either case): found
/// by its first 16 hex digits (the index's key), then the whole compared
/// as sent, and only if unequal in either case. Every EVALSHA ends here:
/// decoding all 40 digits cost about 260 instructions a call.
pub(super) fn by_sha(sha: &[u8]) -> Option<(&'static Family, &'static Known)> {
    let sha: &[u8; 40] = sha.try_into().ok()?;
    let key = hex_key(sha[..16].try_into().expect("16 digits"))?;
    let (.., family, known) = with_key(key).find(|(.., known)| {
        let text_sha = known.sha1.as_bytes();
        text_sha == sha || text_sha.eq_ignore_ascii_case(sha)
    })?;
    Some((family, known))
}

/// The text `body`: hashed only when its length is one of a known text.
pub(super) fn by_body(body: &[u8]) -> Option<(&'static Family, &'static Known)> {
    primitive::families().flat_map(|family| family.scripts).find(|known| known.len == body.len())?;
    by_digest(&sha1_smol::Sha1::from(body).digest().bytes())
}

/// Builds the index [`by_digest`] searches: at load, so that no call
/// through the filter pays for it.
pub fn prepare() {
    by_digest(&[0; 20]);
}

/// Every EVAL of a known length ends here: the texts of the digest's
/// key, then the whole digest checked.
fn by_digest(digest: &Digest) -> Option<(&'static Family, &'static Known)> {
    let (.., family, known) = with_key(digest_key(digest)).find(|(_, other, ..)| other == digest)?;
    Some((family, known))
}

type Indexed = (u64, Digest, &'static Family, &'static Known);

/// The texts whose digest starts with the 8 bytes `key`: a binary search
/// over the texts' digests, sorted once by those bytes (one integer
/// compared a step).
fn with_key(key: u64) -> impl Iterator<Item = &'static Indexed> {
    static INDEX: OnceLock<Vec<Indexed>> = OnceLock::new();
    let index = INDEX.get_or_init(|| {
        let mut index: Vec<_> = primitive::families()
            .flat_map(|family| family.scripts.iter().map(move |known| (family, known)))
            .filter_map(|(family, known)| {
                let digest = decode_sha1(known.sha1.as_bytes())?;
                Some((digest_key(&digest), digest, family, known))
            })
            .collect();
        index.sort_by_key(|&(key, digest, ..)| (key, digest));
        index
    });
    let first = index.partition_point(|&(other, ..)| other < key);
    index[first..].iter().take_while(move |&&(other, ..)| other == key)
}

type Digest = [u8; 20];

fn digest_key(digest: &Digest) -> u64 {
    u64::from_be_bytes(digest[..8].try_into().expect("8 bytes"))
}

/// Each byte's value as a hex digit, in either case; `INVALID` for others.
const HEX_DIGITS: [u8; 256] = {
    let mut digits = [INVALID; 256];
    let mut c = 0;
    while c < 256 {
        digits[c] = match c as u8 {
            b'0'..=b'9' => c as u8 - b'0',
            b'a'..=b'f' => c as u8 - b'a' + 10,
            b'A'..=b'F' => c as u8 - b'A' + 10,
            _ => INVALID,
        };
        c += 1;
    }
    digits
};
const INVALID: u8 = 0xff;

/// The first 16 hex digits of a SHA-1 (either case) as the index's key:
/// what [`digest_key`] makes of the digest's first 8 bytes.
pub(super) fn hex_key(hex: &[u8; 16]) -> Option<u64> {
    let mut key = 0;
    let mut seen = 0;
    for &c in hex {
        let digit = HEX_DIGITS[c as usize];
        seen |= digit;
        key = key << 4 | u64::from(digit & 0xf);
    }
    (seen & 0xf0 == 0).then_some(key)
}

/// A SHA-1 in hex, in either case, by table (the texts' own, once).
pub(super) fn decode_sha1(hex: &[u8]) -> Option<Digest> {
    let hex: &[u8; 40] = hex.try_into().ok()?;
    let mut digest = [0; 20];
    let mut seen = 0;
    for (i, byte) in digest.iter_mut().enumerate() {
        let (high, low) = (HEX_DIGITS[hex[2 * i] as usize], HEX_DIGITS[hex[2 * i + 1] as usize]);
        seen |= high | low;
        *byte = high << 4 | low;
    }
    (seen & 0xf0 == 0).then_some(digest)
}
