//! In-memory stores for the unit tests: a lock key and an unlock latch
//! (or acquire record) key that record every write as the command Redis
//! would replicate.

use super::acquire_once::AcquireRecord;
use super::latch::UnlockLatch;
use super::{parse_hold_count, KeyKind, LockStore};
use crate::error::LockError;
use std::collections::BTreeMap;

/// An in-memory lock key that records every write as the command Redis
/// would replicate.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryStore {
    /// `None`: the key is missing. `Some(None)`: a non-hash key.
    pub hash: Option<Option<BTreeMap<Vec<u8>, Vec<u8>>>>,
    pub expire_at: Option<i64>,
    pub effects: Vec<String>,
}

impl MemoryStore {
    pub fn missing() -> Self {
        Self::default()
    }

    pub fn string_key() -> Self {
        Self { hash: Some(None), expire_at: None, effects: vec![] }
    }

    pub fn hash(fields: &[(&str, &str)], expire_at: Option<i64>) -> Self {
        let map = fields.iter().map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec())).collect();
        Self { hash: Some(Some(map)), expire_at, effects: vec![] }
    }

    pub fn fields(&self) -> Option<&BTreeMap<Vec<u8>, Vec<u8>>> {
        self.hash.as_ref().and_then(Option::as_ref)
    }

    pub fn fields_mut(&mut self) -> &mut BTreeMap<Vec<u8>, Vec<u8>> {
        self.hash.get_or_insert_with(|| Some(BTreeMap::new())).get_or_insert_with(BTreeMap::new)
    }
}

impl LockStore for MemoryStore {
    type Owner = [u8];

    fn kind(&self) -> KeyKind {
        match &self.hash {
            None => KeyKind::Missing,
            Some(Some(_)) => KeyKind::Hash,
            Some(None) => KeyKind::Other,
        }
    }

    fn hold_count(&self, owner: &[u8]) -> Result<Option<i64>, LockError> {
        self.fields().and_then(|f| f.get(owner)).map(|v| parse_hold_count(v)).transpose()
    }

    fn holds_only_counts(&self) -> bool {
        self.fields().is_some_and(|f| f.values().all(|v| parse_hold_count(v).is_ok()))
    }

    fn holder_count(&self) -> i64 {
        self.fields().map_or(0, |f| f.len() as i64)
    }

    fn expire_at(&self) -> Option<i64> {
        self.expire_at
    }

    fn increment(&mut self, owner: &[u8], by: i64, new_count: i64) {
        self.fields_mut().insert(owner.to_vec(), new_count.to_string().into_bytes());
        self.effects.push(format!("HINCRBY {} {by}", String::from_utf8_lossy(owner)));
    }

    fn set_expire_at(&mut self, at_ms: i64) {
        self.expire_at = Some(at_ms);
        self.effects.push(format!("PEXPIREAT {at_ms}"));
    }

    fn remove_last_hold(&mut self, owner: &[u8]) {
        self.hash = None;
        self.expire_at = None;
        self.effects.push(format!("DEL after the last hold of {}", String::from_utf8_lossy(owner)));
    }

    fn delete(&mut self) {
        self.hash = None;
        self.expire_at = None;
        self.effects.push("DEL".into());
    }

    fn publish_release(&mut self) {
        self.effects.push("PUBLISH".into());
    }
}

/// An in-memory unlock latch key, or acquire record key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemoryLatch {
    pub value: Option<Vec<u8>>,
    pub effects: Vec<String>,
}

impl MemoryLatch {
    pub fn holding(value: &str) -> Self {
        Self { value: Some(value.as_bytes().to_vec()), effects: vec![] }
    }
}

impl UnlockLatch for MemoryLatch {
    fn recorded(&self) -> Result<Option<bool>, LockError> {
        match self.value.as_deref() {
            None => Ok(None),
            Some(b"0") => Ok(Some(false)),
            Some(b"1") => Ok(Some(true)),
            Some(_) => Err(LockError::NotALatch),
        }
    }

    fn record(&mut self, released: bool, at_ms: i64) {
        let value = u8::from(released);
        self.value = Some(value.to_string().into_bytes());
        self.effects.push(format!("SET {value} PXAT {at_ms}"));
    }
}

impl AcquireRecord for MemoryLatch {
    fn text(&self) -> Result<Option<Vec<u8>>, LockError> {
        Ok(self.value.clone())
    }

    fn set_text(&mut self, text: &[u8], at_ms: i64) {
        self.value = Some(text.to_vec());
        self.effects.push(format!("SET {} PXAT {at_ms}", String::from_utf8_lossy(text)));
    }
}
