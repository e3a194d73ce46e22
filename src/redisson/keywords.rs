//! The filter's table of keyword strings (see `filter`): the keywords and
//! command names rewrites add, each mapped to the one string made for it.
//! Pure: the values are the filter's (each string's address, made and
//! kept by it, and the command a name names). Every native argument not taken from the call is looked up
//! here, so a lookup is a hash of a few bytes and one comparison, not a
//! walk over every keyword.

/// Longer than every keyword and command name (`RLATCH.TRYSETCOUNT`: 18).
pub const LONGEST: usize = 24;
/// More than every keyword and command name the rewrites use.
pub const MOST: usize = 64;
/// Twice `MOST`, a power of two: a probe stops at an empty slot soon.
const SLOTS: usize = 128;

#[derive(Clone, Copy)]
struct Entry<V> {
    bytes: [u8; LONGEST],
    len: u8,
    value: V,
}

pub struct Keywords<V: Copy> {
    slots: [Option<Entry<V>>; SLOTS],
    count: usize,
}

impl<V: Copy> Keywords<V> {
    pub const fn new() -> Self {
        Self { slots: [None; SLOTS], count: 0 }
    }

    /// The value kept for `arg`.
    pub fn get(&self, arg: &[u8]) -> Option<V> {
        Some(self.probe(arg)?.1?.value)
    }

    /// Whether [`insert`](Self::insert) would keep `arg`: a keyword
    /// (capitals and dots only, 1 to `LONGEST` bytes) not kept yet, with
    /// room left.
    pub fn would_keep(&self, arg: &[u8]) -> bool {
        let keyword = arg.iter().all(|&byte| byte.is_ascii_uppercase() || byte == b'.');
        keyword && self.count < MOST && matches!(self.probe(arg), Some((_, None)))
    }

    /// Keeps `value` for `arg` if it [would keep](Self::would_keep) it;
    /// whether kept.
    pub fn insert(&mut self, arg: &[u8], value: V) -> bool {
        if !self.would_keep(arg) {
            return false;
        }
        let Some((slot, None)) = self.probe(arg) else { return false };
        let mut bytes = [0; LONGEST];
        bytes[..arg.len()].copy_from_slice(arg);
        self.slots[slot] = Some(Entry { bytes, len: arg.len() as u8, value });
        self.count += 1;
        true
    }

    /// The slot of `arg`, and its entry if kept (`None` for an argument
    /// no keyword can be: empty or too long).
    fn probe(&self, arg: &[u8]) -> Option<(usize, Option<&Entry<V>>)> {
        let (&first, &last) = (arg.first()?, arg.last()?);
        if arg.len() > LONGEST {
            return None;
        }
        let hash = arg.len() * 131 + first as usize * 31 + last as usize * 7 + arg[arg.len() / 2] as usize;
        let mut slot = hash % SLOTS;
        loop {
            match &self.slots[slot] {
                None => return Some((slot, None)),
                Some(entry) if entry.len as usize == arg.len() && entry.bytes[..arg.len()] == *arg => {
                    return Some((slot, Some(entry)))
                }
                Some(_) => slot = (slot + 1) % SLOTS,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_are_kept_and_found_others_not() {
        let mut table = Keywords::new();
        assert!(table.insert(b"VIA", 1));
        assert!(table.insert(b"RLATCH.TRYSETCOUNT", 2));
        assert!(!table.insert(b"VIA", 3), "kept once");
        assert!(!table.insert(b"via", 4), "lower case is no keyword");
        assert!(!table.insert(b"", 5));
        assert!(!table.insert(&[b'A'; LONGEST + 1], 6));
        assert!(!table.insert(b"u:1", 7));
        assert_eq!(table.get(b"VIA"), Some(1));
        assert_eq!(table.get(b"RLATCH.TRYSETCOUNT"), Some(2));
        assert_eq!(table.get(b"VIAX"), None);
        assert_eq!(table.get(b"VI"), None);
        assert_eq!(table.get(b""), None);
        assert_eq!(table.get(&[b'A'; LONGEST + 1]), None);
    }

    #[test]
    fn the_table_keeps_at_most_its_bound_and_finds_every_kept_one() {
        let mut table = Keywords::new();
        // Many keywords of one length and ends: each probe walks past the others.
        let names: Vec<Vec<u8>> =
            (0..MOST + 10).map(|i| format!("A{}Z", "B".repeat(i % 20) + &"C".repeat(i / 20)).into_bytes()).collect();
        let kept: Vec<bool> = names.iter().enumerate().map(|(i, name)| table.insert(name, i)).collect();
        assert_eq!(kept.iter().filter(|&&kept| kept).count(), MOST);
        for (i, (name, kept)) in names.iter().zip(kept).enumerate() {
            assert_eq!(table.get(name), kept.then_some(i), "{}", String::from_utf8_lossy(name));
        }
    }
}
