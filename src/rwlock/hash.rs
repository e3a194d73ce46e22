//! The read-write lock's hash: its `mode` and hold counts, checked so that
//! a hash that is not a read-write lock is never taken for one.

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
pub struct RwHash<'a> {
    name: &'a [u8],
    /// `None` when the lock is free (the hash is missing).
    pub mode: Option<Mode>,
}

impl<'a> RwHash<'a> {
    pub fn read<K: Keyspace>(keys: &mut K, name: &'a [u8]) -> Result<Self> {
        let mode = match keys.key_type(name)? {
            KeyType::Missing => None,
            KeyType::Hash => match keys.hget(name, b"mode")?.as_deref() {
                Some(b"read") => Some(Mode::Read),
                Some(b"write") => Some(Mode::Write),
                _ => return Err(LockError::NotAReadWriteLock),
            },
            _ => return Err(LockError::WrongType),
        };
        Ok(Self { name, mode })
    }

    /// A field's hold count, 0 when absent.
    pub fn count<K: Keyspace>(&self, keys: &mut K, field: &[u8]) -> Result<i64> {
        match keys.hget(self.name, field)? {
            None => Ok(0),
            Some(value) => parse_holds(&value).ok_or(LockError::NotAReadWriteLock),
        }
    }
}

/// A stored hold count, as HINCRBY reads it.
pub fn parse_holds(value: &[u8]) -> Option<i64> {
    parse_hold_count(value).ok()
}
