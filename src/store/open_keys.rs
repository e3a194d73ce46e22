//! The keys one command opens: the command's own key (argv 1, which Redis
//! checked) and the keys derived from it, each opened once and checked on
//! its first touch: in cluster mode a derived key's slot must be the
//! name's, and the caller's ACL must allow it.

use super::acl::Caller;
use super::cluster_mode;
use super::key::SignalOnWriteKey;
use crate::error::LockError;
use crate::keyspace::Result;
use redis_module::{raw, Context, RedisString};
use rlock_protocol::key_slot;
use smallvec::SmallVec;
use std::collections::HashMap;

/// Open keys are found by a scan up to this many, then through an index.
const INDEXED_FROM: usize = 8;
/// A key opened by this command.
struct OpenKey {
    // Before its name: the key closes before its name is freed.
    key: SignalOnWriteKey,
    /// The derived key's name; `None` for the command's own key. Compared
    /// in place (no copy of its bytes: one allocation less per key).
    derived: Option<NameString>,
    /// Its list iterator may be stale (see [`OpenKeys::listed`]).
    list_used: bool,
}
impl OpenKey {
    /// Its name's bytes; `own`: the command's key's.
    fn bytes<'n>(&'n self, own: &'n [u8]) -> &'n [u8] {
        self.derived.as_ref().map_or(own, NameString::bytes)
    }

    /// Its name; `own`: the command's key.
    fn name(&self, own: &RedisString) -> *mut raw::RedisModuleString {
        self.derived.as_ref().map_or(own.inner, |name| name.string.inner)
    }
}

/// A module string made for a name (a derived key, a channel), its bytes
/// read once: names are compared on every touch, and each read of a module
/// string's bytes is a call into the server.
pub(super) struct NameString {
    pub string: RedisString,
    start: *const u8,
    len: usize,
}

impl NameString {
    pub fn new(string: RedisString) -> Self {
        let (start, len) = string.as_cstr_ptr_and_len();
        Self { string, start: start.cast(), len }
    }

    /// The string's bytes: they live and stay unchanged as long as it does.
    pub fn bytes(&self) -> &[u8] {
        unsafe { std::slice::from_raw_parts(self.start, self.len) }
    }
}

pub struct OpenKeys<'a> {
    ctx: &'a Context,
    name: &'a RedisString,
    /// The argv key's bytes, read once.
    name_bytes: &'a [u8],
    writable: bool,
    caller: Caller,
    /// A refused derived key goes to `ACL LOG` (not when inspecting, where
    /// a key the caller may not read is shown as missing, not refused).
    log_refusals: bool,
    /// Inline up to four (the fair lock's name, queue, deadlines and latch):
    /// a heap buffer per command costs more than the rest of the bookkeeping.
    open: SmallVec<[OpenKey; 4]>,
    /// Key name -> index in `open`, once there are many (a read release
    /// may touch thousands of hold keys; most commands touch a few, and
    /// make no map: a new map seeds its hasher from a thread local).
    index: Option<HashMap<Vec<u8>, usize>>,
}

impl<'a> OpenKeys<'a> {
    /// Keys opened for writing (`writable`) or reading, on behalf of `caller`.
    pub fn new(ctx: &'a Context, name: &'a RedisString, writable: bool, caller: Caller) -> Self {
        let name_bytes = name.as_slice();
        let open = SmallVec::new();
        Self { ctx, name, name_bytes, writable, caller, log_refusals: true, open, index: None }
    }

    /// Refusals are not logged: the command shows what it may not read as missing.
    pub fn log_no_refusals(&mut self) {
        self.log_refusals = false;
    }

    /// The command's key.
    pub fn name_bytes(&self) -> &'a [u8] {
        self.name_bytes
    }

    /// The open key named `key`, opened (and checked) on first use.
    fn index(&mut self, key: &[u8]) -> Result<usize> {
        let name_bytes = self.name_bytes;
        let found = if self.open.len() <= INDEXED_FROM {
            self.open.iter().position(|open| open.bytes(name_bytes) == key)
        } else {
            self.index.as_ref().and_then(|index| index.get(key)).copied()
        };
        if let Some(index) = found {
            return Ok(index);
        }
        let derived = if key == name_bytes {
            None
        } else {
            if cluster_mode() && key_slot(key) != key_slot(name_bytes) {
                return Err(LockError::DerivedKeyCrossSlot(key.to_vec()));
            }
            let derived = RedisString::create_from_slice(self.ctx.get_raw(), key);
            let access = if self.writable {
                raw::REDISMODULE_CMD_KEY_ACCESS | raw::REDISMODULE_CMD_KEY_UPDATE
            } else {
                raw::REDISMODULE_CMD_KEY_ACCESS
            };
            if !self.caller.may_access_key(&derived, access) {
                if self.log_refusals {
                    self.caller.log_refused_key(&derived);
                }
                return Err(LockError::NoKeyPermission(key.to_vec()));
            }
            Some(NameString::new(derived))
        };
        let opened = self.open_key(derived.as_ref().map_or(self.name.inner, |name| name.string.inner));
        self.open.push(OpenKey { key: opened, derived, list_used: false });
        if self.open.len() > INDEXED_FROM {
            match &mut self.index {
                None => {
                    self.index = Some(self.open.iter().map(|open| open.bytes(name_bytes).to_vec()).zip(0..).collect());
                }
                Some(index) => {
                    index.insert(key.to_vec(), self.open.len() - 1);
                }
            }
        }
        Ok(self.open.len() - 1)
    }

    fn open_key(&self, name: *mut raw::RedisModuleString) -> SignalOnWriteKey {
        let open = if self.writable { SignalOnWriteKey::open } else { SignalOnWriteKey::open_readonly };
        open(self.ctx, name)
    }

    fn inner_name(&self, index: usize) -> *mut raw::RedisModuleString {
        self.open[index].name(self.name)
    }

    /// The key for a list read or delete by index. On Redis 7.0 a list's
    /// iterator in a key handle goes stale after a write or a walk through
    /// it (RM_ListGet then fails an assertion and the server aborts): such
    /// a handle is closed and opened again first.
    pub fn listed(&mut self, key: &[u8]) -> Result<*mut raw::RedisModuleKey> {
        let index = self.index(key)?;
        if self.open[index].list_used {
            self.open[index].key = self.open_key(self.inner_name(index));
        }
        self.open[index].list_used = true;
        Ok(self.open[index].key.read())
    }

    pub fn read(&mut self, key: &[u8]) -> Result<*mut raw::RedisModuleKey> {
        let index = self.index(key)?;
        Ok(self.open[index].key.read())
    }

    /// The name of `key`, opened and checked, for an event about it.
    pub fn name_of(&mut self, key: &[u8]) -> Result<*mut raw::RedisModuleString> {
        let index = self.index(key)?;
        Ok(self.inner_name(index))
    }

    /// The key for writing and its name, for replication and events.
    pub fn write(&mut self, key: &[u8]) -> Result<(*mut raw::RedisModuleKey, *mut raw::RedisModuleString)> {
        let index = self.index(key)?;
        self.open[index].list_used = true;
        let name = self.inner_name(index);
        Ok((self.open[index].key.write(), name))
    }
}
