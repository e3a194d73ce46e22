//! An in-memory [`Keyspace`] for the unit tests of the family logic. It
//! records every effect as the Redis command that would replicate it, and
//! panics when a command touches a key for the first time after it has
//! written something: in Redis that key's ACL or slot check could
//! then refuse the command halfway through.

use super::{KeyType, Keyspace, Moot, Result};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    String(Vec<u8>),
    Hash(BTreeMap<Vec<u8>, Vec<u8>>),
    List(VecDeque<Vec<u8>>),
    Zset(BTreeMap<Vec<u8>, i64>),
    /// A type no primitive uses (a set, a stream...).
    Other,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct MemoryKeyspace {
    /// Key -> value and absolute expiry.
    pub keys: BTreeMap<Vec<u8>, (Value, Option<i64>)>,
    /// Each write, as the command that replicates it (`HSET k f v`, ...).
    pub effects: Vec<String>,
    touched: BTreeSet<Vec<u8>>,
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

impl MemoryKeyspace {
    /// A keyspace as it is at `now_ms`: keys whose expiry has passed are gone.
    pub fn at(keys: Vec<(&str, Value, Option<i64>)>, now_ms: i64) -> Self {
        let keys = keys
            .into_iter()
            .filter(|(_, _, at)| at.is_none_or(|at| at > now_ms))
            .map(|(name, value, at)| (name.as_bytes().to_vec(), (value, at)))
            .collect();
        Self { keys, ..Self::default() }
    }

    /// The same keys, as the next command sees them at `now_ms`: expired
    /// keys gone, no effects recorded yet.
    pub fn next_command(&self, now_ms: i64) -> Self {
        let keys = self.keys.iter().filter(|(_, (_, at))| at.is_none_or(|at| at > now_ms));
        Self { keys: keys.map(|(name, entry)| (name.clone(), entry.clone())).collect(), ..Self::default() }
    }

    pub fn hash(fields: &[(&str, &str)]) -> Value {
        Value::Hash(fields.iter().map(|(f, v)| (f.as_bytes().to_vec(), v.as_bytes().to_vec())).collect())
    }

    pub fn list(items: &[&str]) -> Value {
        Value::List(items.iter().map(|item| item.as_bytes().to_vec()).collect())
    }

    pub fn zset(members: &[(&str, i64)]) -> Value {
        Value::Zset(members.iter().map(|(m, s)| (m.as_bytes().to_vec(), *s)).collect())
    }

    pub fn string(value: &str) -> Value {
        Value::String(value.as_bytes().to_vec())
    }

    fn touch(&mut self, name: &[u8]) {
        if self.touched.insert(name.to_vec()) {
            assert!(self.effects.is_empty(), "{} first touched after a write: {:?}", text(name), self.effects);
        }
    }

    fn read(&mut self, key: &[u8]) -> Option<&Value> {
        self.touch(key);
        self.keys.get(key).map(|(value, _)| value)
    }

    fn write(&mut self, key: &[u8], effect: String) {
        self.touch(key);
        self.effects.push(effect);
    }

    /// The value at `key`, created as `empty` when missing.
    fn entry(&mut self, key: &[u8], empty: Value) -> &mut Value {
        &mut self.keys.entry(key.to_vec()).or_insert((empty, None)).0
    }

    /// Deletes a container left empty, as Redis does.
    fn drop_if_empty(&mut self, key: &[u8]) {
        let empty = match self.keys.get(key) {
            Some((Value::Hash(h), _)) => h.is_empty(),
            Some((Value::List(l), _)) => l.is_empty(),
            Some((Value::Zset(z), _)) => z.is_empty(),
            _ => false,
        };
        if empty {
            self.keys.remove(key);
        }
    }
}

impl Keyspace for MemoryKeyspace {
    fn key_type(&mut self, key: &[u8]) -> Result<KeyType> {
        Ok(match self.read(key) {
            None => KeyType::Missing,
            Some(Value::String(_)) => KeyType::String,
            Some(Value::Hash(_)) => KeyType::Hash,
            Some(Value::List(_)) => KeyType::List,
            Some(Value::Zset(_)) => KeyType::Zset,
            Some(Value::Other) => KeyType::Other,
        })
    }

    fn expire_at(&mut self, key: &[u8]) -> Result<Option<i64>> {
        self.touch(key);
        Ok(self.keys.get(key).and_then(|(_, at)| *at))
    }

    fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(match self.read(key) {
            Some(Value::String(value)) => Some(value.clone()),
            _ => None,
        })
    }

    fn hget(&mut self, key: &[u8], field: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(match self.read(key) {
            Some(Value::Hash(hash)) => hash.get(field).cloned(),
            _ => None,
        })
    }

    fn hash_visit(&mut self, key: &[u8], visit: &mut dyn FnMut(&[u8], &[u8])) -> Result<()> {
        if let Some(Value::Hash(hash)) = self.read(key) {
            hash.iter().for_each(|(field, value)| visit(field, value));
        }
        Ok(())
    }

    fn lrange(&mut self, key: &[u8]) -> Result<Vec<Vec<u8>>> {
        Ok(match self.read(key) {
            Some(Value::List(list)) => list.iter().cloned().collect(),
            _ => Vec::new(),
        })
    }

    fn zrange(&mut self, key: &[u8]) -> Result<Vec<(Vec<u8>, i64)>> {
        let mut members: Vec<_> = match self.read(key) {
            Some(Value::Zset(zset)) => zset.iter().map(|(m, s)| (m.clone(), *s)).collect(),
            _ => Vec::new(),
        };
        members.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
        Ok(members)
    }

    fn zrange_to(&mut self, key: &[u8], max: i64, limit: usize) -> Result<Vec<(Vec<u8>, i64)>> {
        let mut members = self.zrange(key)?;
        members.retain(|(_, score)| *score <= max);
        members.truncate(limit);
        Ok(members)
    }

    fn zscore(&mut self, key: &[u8], member: &[u8]) -> Result<Option<i64>> {
        Ok(match self.read(key) {
            Some(Value::Zset(zset)) => zset.get(member).copied(),
            _ => None,
        })
    }

    fn zcard(&mut self, key: &[u8]) -> Result<usize> {
        Ok(match self.read(key) {
            Some(Value::Zset(zset)) => zset.len(),
            _ => 0,
        })
    }

    fn set(&mut self, key: &[u8], value: &[u8], expire_at: Option<i64>) -> Result<()> {
        let px = expire_at.map(|at| format!(" PXAT {at}")).unwrap_or_default();
        self.write(key, format!("SET {} {}{px}", text(key), text(value)));
        self.keys.insert(key.to_vec(), (Value::String(value.to_vec()), expire_at));
        Ok(())
    }

    fn incr_by(&mut self, key: &[u8], by: i64, new: i64) -> Result<()> {
        self.write(key, format!("INCRBY {} {by}", text(key)));
        *self.entry(key, Value::String(Vec::new())) = Value::String(new.to_string().into_bytes());
        Ok(())
    }

    fn hset(&mut self, key: &[u8], pairs: &[(&[u8], &[u8])]) -> Result<()> {
        let args: Vec<String> = pairs.iter().map(|(f, v)| format!("{} {}", text(f), text(v))).collect();
        self.write(key, format!("HSET {} {}", text(key), args.join(" ")));
        if let Value::Hash(hash) = self.entry(key, Value::Hash(BTreeMap::new())) {
            for (field, value) in pairs {
                hash.insert(field.to_vec(), value.to_vec());
            }
        }
        Ok(())
    }

    fn hincr_by(&mut self, key: &[u8], field: &[u8], by: i64, new: i64) -> Result<()> {
        self.write(key, format!("HINCRBY {} {} {by}", text(key), text(field)));
        if let Value::Hash(hash) = self.entry(key, Value::Hash(BTreeMap::new())) {
            hash.insert(field.to_vec(), new.to_string().into_bytes());
        }
        Ok(())
    }

    fn hdel(&mut self, key: &[u8], field: &[u8]) -> Result<()> {
        self.write(key, format!("HDEL {} {}", text(key), text(field)));
        if let Some((Value::Hash(hash), _)) = self.keys.get_mut(key) {
            hash.remove(field);
        }
        self.drop_if_empty(key);
        Ok(())
    }

    fn lpop(&mut self, key: &[u8]) -> Result<()> {
        self.write(key, format!("LPOP {}", text(key)));
        if let Some((Value::List(list), _)) = self.keys.get_mut(key) {
            list.pop_front();
        }
        self.drop_if_empty(key);
        Ok(())
    }

    fn rpush(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.write(key, format!("RPUSH {} {}", text(key), text(value)));
        if let Value::List(list) = self.entry(key, Value::List(VecDeque::new())) {
            list.push_back(value.to_vec());
        }
        Ok(())
    }

    fn lrem(&mut self, key: &[u8], values: &[&[u8]]) -> Result<()> {
        for value in values {
            self.write(key, format!("LREM {} 0 {}", text(key), text(value)));
            if let Some((Value::List(list), _)) = self.keys.get_mut(key) {
                list.retain(|item| item != value);
            }
        }
        self.drop_if_empty(key);
        Ok(())
    }

    fn zadd(&mut self, key: &[u8], member: &[u8], score: i64) -> Result<()> {
        self.write(key, format!("ZADD {} {score} {}", text(key), text(member)));
        if let Value::Zset(zset) = self.entry(key, Value::Zset(BTreeMap::new())) {
            zset.insert(member.to_vec(), score);
        }
        Ok(())
    }

    fn zrem(&mut self, key: &[u8], members: &[&[u8]]) -> Result<()> {
        let listed: Vec<String> = members.iter().map(|member| text(member)).collect();
        self.write(key, format!("ZREM {} {}", text(key), listed.join(" ")));
        if let Some((Value::Zset(zset), _)) = self.keys.get_mut(key) {
            for member in members {
                zset.remove(*member);
            }
        }
        self.drop_if_empty(key);
        Ok(())
    }

    fn set_expire_at(&mut self, key: &[u8], at_ms: i64) -> Result<()> {
        self.write(key, format!("PEXPIREAT {} {at_ms}", text(key)));
        if let Some((_, at)) = self.keys.get_mut(key) {
            *at = Some(at_ms);
        }
        Ok(())
    }

    fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.write(key, format!("DEL {}", text(key)));
        self.keys.remove(key);
        Ok(())
    }

    fn delete_both(&mut self, first: &[u8], second: &[u8]) -> Result<()> {
        self.touch(second);
        self.write(first, format!("DEL {} {}", text(first), text(second)));
        self.keys.remove(first);
        self.keys.remove(second);
        Ok(())
    }

    fn announce(&mut self, key: &[u8], _event: Moot) -> Result<()> {
        self.touch(key);
        Ok(())
    }

    fn publish(&mut self, channel: &[u8], message: &[u8]) -> Result<()> {
        self.effects.push(format!("PUBLISH {} {}", text(channel), text(message)));
        Ok(())
    }
}
