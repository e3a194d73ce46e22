//! The read-write lock's hash: its `mode` and hold counts, checked so that
//! a hash that is not a read-write lock is never taken for one.

use super::MAX_READ_HOLDS;
use crate::error::LockError;
use crate::keyspace::{KeyType, Keyspace, Result};
use crate::lock::parse_hold_count;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Read,
    Write,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Read => "read",
            Mode::Write => "write",
        }
    }
}

/// The lock's hash as read at the start of a command.
pub struct RwHash {
    /// `None` when the lock is free (the hash is missing).
    pub mode: Option<Mode>,
    /// Every field but `mode`, with its hold count (always >= 1).
    pub holds: Vec<(Vec<u8>, i64)>,
}

impl RwHash {
    /// Reads the whole hash. Refused: a key of another type, a hash
    /// without a valid `mode`, or with a field whose value is not a
    /// positive integer (Redisson deletes a field when its count reaches 0).
    pub fn read<K: Keyspace>(keys: &mut K, name: &[u8]) -> Result<Self> {
        match keys.key_type(name)? {
            KeyType::Missing => return Ok(Self { mode: None, holds: Vec::new() }),
            KeyType::Hash => {}
            _ => return Err(LockError::WrongType),
        }
        // Read in place: only the holders' names are copied.
        let (mut mode, mut holds, mut valid) = (None, Vec::new(), true);
        keys.hash_visit(name, &mut |field, value| {
            if field == b"mode" {
                mode = match value {
                    b"read" => Some(Mode::Read),
                    b"write" => Some(Mode::Write),
                    _ => None,
                };
                valid &= mode.is_some();
            } else {
                match parse_hold_count(value) {
                    Ok(count) if count > 0 => holds.push((field.to_vec(), count)),
                    _ => valid = false,
                }
            }
        })?;
        if !valid {
            return Err(LockError::NotAReadWriteLock);
        }
        match mode {
            None => Err(LockError::NotAReadWriteLock),
            mode => Ok(Self { mode, holds }),
        }
    }

    /// A field's hold count, 0 when absent.
    pub fn count(&self, field: &[u8]) -> i64 {
        self.holds.iter().find(|(held, _)| held == field).map_or(0, |(_, count)| *count)
    }

    /// The hold count of `owner`'s write hold (field `<owner>:write`), 0
    /// when absent; its field is not made to be looked up.
    pub fn write_count(&self, owner: &[u8]) -> i64 {
        let is_owners = |field: &[u8]| field.strip_suffix(WRITE_SUFFIX) == Some(owner);
        self.holds.iter().find(|(field, _)| is_owners(field)).map_or(0, |(_, count)| *count)
    }

    /// The reader fields (a writer's ends with `:write`) and their counts.
    pub fn readers(&self) -> impl Iterator<Item = (&[u8], i64)> {
        self.holds.iter().filter(|(field, _)| !is_write_field(field)).map(|(field, count)| (field.as_slice(), *count))
    }

    /// Refuses a lock whose read holds, `extra` more included, would pass
    /// [`MAX_READ_HOLDS`]: every read hold is a key a release may visit.
    pub fn check_read_holds(&self, extra: i64) -> Result<()> {
        let total = self.readers().try_fold(extra, |total, (_, count)| total.checked_add(count));
        match total {
            Some(total) if total <= MAX_READ_HOLDS => Ok(()),
            _ => Err(LockError::TooManyReadHolds),
        }
    }
}

/// What a write hold's field adds to its owner.
const WRITE_SUFFIX: &[u8] = b":write";

pub fn is_write_field(field: &[u8]) -> bool {
    field.ends_with(WRITE_SUFFIX)
}
