//! The external resource holders write to while they hold a lock, and
//! what fencing makes of those writes: it takes a write only with a token
//! at least as high as the highest it has seen for that name. A token
//! given to two holders (a promoted replica counting on from a stale
//! counter) passes that check: those writes are counted as stale.

use std::collections::HashMap;
use std::sync::Mutex;

#[derive(Default)]
pub struct Resource {
    state: Mutex<Writes>,
}

/// What the resource did with the writes, per run.
#[derive(Debug, Default, Clone)]
pub struct Writes {
    /// Per name: the highest token seen, and the client that wrote it.
    highest: HashMap<usize, (i64, usize)>,
    pub accepted: u64,
    pub rejected: u64,
    /// Accepted with a token another holder had written with already.
    pub stale_accepted: u64,
}

impl Resource {
    pub fn write(&self, name: usize, client: usize, token: i64) {
        let mut writes = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match writes.highest.get(&name).copied() {
            Some((highest, _)) if token < highest => writes.rejected += 1,
            Some((highest, writer)) if token == highest && writer != client => {
                writes.accepted += 1;
                writes.stale_accepted += 1;
            }
            _ => {
                writes.highest.insert(name, (token, client));
                writes.accepted += 1;
            }
        }
    }

    pub fn writes(&self) -> Writes {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}
