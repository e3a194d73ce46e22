//! The slot map shared by a client's connections to a cluster, as this
//! client last read it from CLUSTER SLOTS, so that the watchdog can split
//! its commands per node without asking every round, and so that key
//! commands for a slot whose owner changed go to the new owner before
//! redis-rs learns of it (redis-rs reads its own map again only on a
//! redirect, which a hung old primary never sends).

use super::handback::Handback;
use super::node_connections::{Node, NodeConnections};
use super::slot_map::{read_slot_map, SlotMap, SLOTS};
use redis::cluster_async::ClusterConnection;
use redis::{ConnectionInfo, RedisResult};
use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::time::Instant;

/// Redirects redis-rs follows by itself never reach us: a map this old is
/// read again even when nothing failed.
const MAX_AGE: Duration = Duration::from_secs(60);

/// The slot map shared by a client's connections to a cluster, read again
/// on first use, after a node failed or a key had no known owner, and when
/// it is old; and the client's own connections to single nodes.
pub(crate) struct SlotMapCache {
    state: Arc<Mutex<CacheState>>,
    pub nodes: Arc<NodeConnections>,
    handback: Handback,
}

#[derive(Default)]
struct CacheState {
    map: Option<(Arc<SlotMap>, Instant)>,
    stale: bool,
    /// Nodes whose pipelines failed in the last round: not asked first.
    failed: HashSet<Node>,
    /// Slots whose key commands this client routes by its own map, not by
    /// redis-rs's: those whose owner it saw change, and those whose node
    /// kept a caller waiting.
    rerouted: SlotSet,
    /// Slots whose node kept a caller waiting since the last read: their
    /// ranges are rerouted once the map is read again.
    suspects: Vec<u16>,
}

/// A set of slots.
struct SlotSet(Box<[bool]>);

impl Default for SlotSet {
    fn default() -> Self {
        Self(vec![false; SLOTS].into_boxed_slice())
    }
}

impl SlotSet {
    fn contains(&self, slot: u16) -> bool {
        self.0.get(usize::from(slot)).copied().unwrap_or(false)
    }

    fn set_range(&mut self, (start, end): (u16, u16), value: bool) {
        let end = usize::from(end).min(SLOTS - 1);
        self.0.iter_mut().take(end + 1).skip(usize::from(start)).for_each(|slot| *slot = value);
    }

    fn any_in(&self, (start, end): (u16, u16)) -> bool {
        (start..=end).any(|slot| self.contains(slot))
    }
}

impl CacheState {
    /// Takes a freshly read map: the slots whose owner changed since the
    /// last one because that owner failed (not an ordinary reshard, which
    /// redis-rs follows by its redirects), and the ranges of the suspect
    /// slots, are rerouted. Returns the rerouted ranges.
    fn replace(&mut self, map: Arc<SlotMap>) -> Vec<(u16, u16)> {
        if let Some((old, _)) = &self.map {
            for slot in 0..SLOTS as u16 {
                let owner = old.owner(slot);
                if owner != map.owner(slot) && owner.is_some_and(|owner| self.failed.contains(owner)) {
                    self.rerouted.set_range((slot, slot), true);
                }
            }
        }
        for slot in std::mem::take(&mut self.suspects) {
            if let Some(range) = map.range_of(slot) {
                self.rerouted.set_range(range, true);
            }
        }
        self.map = Some((map.clone(), Instant::now()));
        self.stale = false;
        map.0.iter().map(|range| (range.start, range.end)).filter(|range| self.rerouted.any_in(*range)).collect()
    }
}

impl SlotMapCache {
    /// `template`: a seed node's settings, for the connections to single nodes.
    pub fn new(template: Option<ConnectionInfo>) -> Self {
        let nodes = Arc::new(NodeConnections::new(template));
        Self { state: Arc::default(), nodes, handback: Handback::default() }
    }

    /// The map, refreshed first when needed (within `timeout`). A failed
    /// refresh falls back on the old map, and is tried again next time.
    pub async fn get(&self, connection: &ClusterConnection, timeout: Duration) -> RedisResult<Arc<SlotMap>> {
        let (current, candidates) = {
            let state = self.state();
            let current = state.map.as_ref().map(|(map, _)| map.clone());
            let fresh = state.map.as_ref().is_some_and(|(_, read_at)| read_at.elapsed() < MAX_AGE);
            if let Some(map) = current.as_ref().filter(|_| fresh && !state.stale) {
                return Ok(map.clone());
            }
            let candidates = current.as_ref().map(|map| map.refresh_candidates(&state.failed)).unwrap_or_default();
            (current, candidates)
        };
        let error = match read_slot_map(connection, &self.nodes, candidates, timeout).await {
            Ok(map) => {
                let map = Arc::new(map);
                let rerouted = self.state().replace(map.clone());
                let state = Arc::downgrade(&self.state);
                self.handback.probe(connection, rerouted, timeout, move |range| {
                    if let Some(state) = state.upgrade() {
                        state.lock().unwrap_or_else(PoisonError::into_inner).rerouted.set_range(range, false);
                    }
                });
                return Ok(map);
            }
            Err(err) => err,
        };
        current.ok_or(error)
    }

    /// What the last round saw: the nodes that failed, and whether some
    /// key had no owner. Either makes the next round read the map again.
    pub fn report(&self, failed: HashSet<Node>, unowned_keys: bool) {
        let mut state = self.state();
        state.stale |= unowned_keys || !failed.is_empty();
        state.failed = failed;
    }

    /// The owner of `slot` by the map as last read, not read again.
    pub fn owner(&self, slot: u16) -> Option<Node> {
        self.state().map.as_ref().and_then(|(map, _)| map.owner(slot).cloned())
    }

    /// Where a key command for `slot` goes: the slot's owner by this map
    /// once the slot is rerouted, else `None` (redis-rs's routing).
    pub fn route(&self, slot: u16) -> Option<Node> {
        let state = self.state();
        let (map, _) = state.map.as_ref().filter(|_| state.rerouted.contains(slot))?;
        map.owner(slot).cloned()
    }

    /// A caller gave up waiting for `slot`'s node: the map is read again
    /// (its owner by this map asked last), and from then on the slot's
    /// range goes by it.
    pub fn suspect(&self, slot: u16) {
        let mut state = self.state();
        state.stale = true;
        state.suspects.push(slot);
        if let Some(owner) = state.map.as_ref().and_then(|(map, _)| map.owner(slot).cloned()) {
            state.failed.insert(owner);
        }
    }

    /// A request's connection to the slot's owner failed: the map is read
    /// again before the next one (the owner may have changed).
    pub fn refresh(&self) {
        self.state().stale = true;
    }

    /// A node answered MOVED or ASK for `slot`, routed by this map: its
    /// range goes by redis-rs's routing again (which follows the redirect
    /// and learns from it), and the map is read again.
    pub fn redirected(&self, slot: u16) {
        let mut state = self.state();
        state.stale = true;
        if let Some(range) = state.map.as_ref().and_then(|(map, _)| map.range_of(slot)) {
            state.rerouted.set_range(range, false);
        }
    }

    /// Whether `node` owns, by this map, a slot that this client routes by
    /// it: redis-rs may not know the node as a primary yet.
    pub fn owns_rerouted(&self, node: &Node) -> bool {
        let state = self.state();
        let Some((map, _)) = state.map.as_ref() else { return false };
        map.0.iter().any(|range| range.primary == *node && state.rerouted.any_in((range.start, range.end)))
    }

    fn state(&self) -> MutexGuard<'_, CacheState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::cluster::slot_map::tests::{address, map, node};
    use redis::Value;

    #[test]
    fn slots_go_by_the_clients_map_once_their_failed_owner_changed_or_kept_a_caller_waiting() {
        let cache = SlotMapCache::new(None);
        cache.state().replace(Arc::new(map()));
        assert_eq!(cache.route(0), None, "redis-rs's routing while nothing changed");
        // The replica of 7001 took over its slots: a reshard, 7001 did not fail.
        let range =
            |start: i64, end: i64, port: u16| Value::Array(vec![Value::Int(start), Value::Int(end), address(port)]);
        let promoted = || vec![range(0, 5460, 7000), range(5461, 10922, 7101), range(10923, 16383, 7002)];
        cache.state().replace(Arc::new(SlotMap::parse(Value::Array(promoted())).unwrap()));
        assert_eq!(cache.route(5461), None, "redis-rs follows a reshard's redirects");
        // Or after 7001 failed.
        cache.state().replace(Arc::new(map()));
        cache.report(HashSet::from([node(7001)]), false);
        cache.state().replace(Arc::new(SlotMap::parse(Value::Array(promoted())).unwrap()));
        assert_eq!((cache.route(5461), cache.route(10922)), (Some(node(7101)), Some(node(7101))));
        assert_eq!((cache.route(5460), cache.route(10923)), (None, None), "the other slots as before");
        // A slot whose node kept a caller waiting: its whole range, once read again.
        cache.suspect(0);
        assert!(cache.state().stale && cache.state().failed.contains(&node(7000)));
        cache.state().replace(Arc::new(map()));
        assert_eq!((cache.route(0), cache.route(5460)), (Some(node(7000)), Some(node(7000))));
        assert!(cache.owns_rerouted(&node(7000)) && !cache.owns_rerouted(&node(7002)));
        // A redirect hands the range back to redis-rs.
        cache.redirected(0);
        assert_eq!(cache.route(0), None);
        assert!(!cache.owns_rerouted(&node(7000)));
    }
}
