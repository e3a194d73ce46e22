//! Request ids on acquires (`… ACQUIRE … ID request_id`, every kind): the
//! server records a grant under the id for a while, so an acquire whose reply was lost can
//! be sent again and get its first outcome (a fenced lock's token too),
//! and a blocked one can be cancelled by its id. The client deletes the record
//! once the outcome is in, as it does the release's latch.
//!
//! No id where the module cannot record one: in a cluster, for a name whose
//! record key hashes to another slot (a `{` with no hash tag), and for an
//! ACL user who may not write record keys (the module refuses before
//! changing anything; the client then stops asking).

use crate::engine::lock_state::LockId;
use crate::engine::protocol::{self, RequestId};
use crate::error::Error;
use crate::transport::connection::Connection;
use crate::transport::latch_sweeper::LatchSweeper;
use rlock_protocol::key_slot;
use std::sync::atomic::{AtomicBool, Ordering};

/// One acquire's request id, and the key its grant is recorded at.
pub(crate) struct Named {
    pub request_id: RequestId,
    record_key: Vec<u8>,
}

impl Named {
    /// A request id for an acquire of `id` sent on `connection`; `None`
    /// where the module cannot record one (`refused`: the server refused a
    /// record key before).
    pub fn new(refused: &AtomicBool, connection: &Connection, id: &LockId) -> Option<Self> {
        if refused.load(Ordering::Relaxed) {
            return None;
        }
        let request_id = protocol::request_id();
        let record_key = rlock_protocol::acquire_record_key(&id.name, request_id.as_bytes());
        let same_slot = !connection.is_cluster() || key_slot(&record_key) == key_slot(&id.name);
        same_slot.then_some(Self { request_id, record_key })
    }

    /// The outcome is in: the record may go.
    pub fn done(self, sweeper: &LatchSweeper) {
        sweeper.delete(self.record_key);
    }
}

/// Whether `err` refuses the acquire record key itself (an ACL): the
/// client then stops sending ids (sets `refused`). The module refuses
/// before any change.
pub(crate) fn refuses_record(refused: &AtomicBool, err: &Error) -> bool {
    let refusal = matches!(err, Error::Redis(err)
        if err.code() == Some("NOPERM") && err.detail().is_some_and(|detail| detail.contains("acquire record key")));
    if refusal {
        refused.store(true, Ordering::Relaxed);
    }
    refusal
}
