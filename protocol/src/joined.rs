//! A name joined from its parts on the stack when it is short: a channel
//! or key a command derives and drops at its end, without a heap
//! allocation (the module's allocator looks up each block's size twice).

use std::ops::Deref;

/// Names up to this many bytes are joined on the stack.
const INLINE: usize = 128;

/// A joined name kept for the length of a command.
pub enum Joined {
    Inline { len: usize, bytes: [u8; INLINE] },
    Heap(Vec<u8>),
}

impl Joined {
    pub fn new(parts: &[&[u8]]) -> Self {
        let mut bytes = [0; INLINE];
        match join_into(parts, &mut bytes) {
            Some(len) => Self::Inline { len, bytes },
            None => Self::Heap(parts.concat()),
        }
    }
}

impl Deref for Joined {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Self::Inline { len, bytes } => &bytes[..*len],
            Self::Heap(bytes) => bytes,
        }
    }
}

/// `use_` of `parts` joined, for a name needed only while it runs (no
/// [`Joined`] moved around).
pub fn with_joined<R>(parts: &[&[u8]], use_: impl FnOnce(&[u8]) -> R) -> R {
    let mut bytes = [0; INLINE];
    match join_into(parts, &mut bytes) {
        Some(len) => use_(&bytes[..len]),
        None => use_(&parts.concat()),
    }
}

/// `parts` joined at the start of `buffer`, and their length; `None` when
/// they do not fit.
fn join_into(parts: &[&[u8]], buffer: &mut [u8]) -> Option<usize> {
    let len = parts.iter().map(|part| part.len()).sum();
    let joined = buffer.get_mut(..len)?;
    let mut at = 0;
    for part in parts {
        joined[at..at + part.len()].copy_from_slice(part);
        at += part.len();
    }
    Some(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_short_and_long_names_alike() {
        for len in [0, 1, INLINE - 9, INLINE - 8, INLINE - 7, 3 * INLINE] {
            let name = vec![b'n'; len];
            let parts: [&[u8]; 3] = [b"prefix{", &name, b"}"];
            let expected = parts.concat();
            assert_eq!(&*Joined::new(&parts), expected.as_slice(), "name of {len} bytes");
            assert_eq!(with_joined(&parts, <[u8]>::to_vec), expected, "name of {len} bytes");
        }
        assert_eq!(&*Joined::new(&[]), b"");
    }
}
