//! A fair lock whose slot left this node (cluster mode): its keys moved,
//! or are moving, to another node, and so does its queue.

use super::handoff::{disarm, locks, take_blocked, unblock};
use crate::error::LockError;
use crate::handoff::events::unsubscribe_if_idle;
use crate::handoff::glue::{error_text, may_write as may_write_keys, MayWrite, Outcome};
use redis_module::Context;
use rlock_protocol::{fair_queue_key, fair_timeout_key};

/// Whether the server may write fair lock `name` now: all its keys,
/// which a resharding tool may move in different batches (a look must
/// not write again a key that has left).
pub(super) fn may_write(ctx: &Context, name: &[u8]) -> MayWrite {
    may_write_keys(ctx, &[name, &fair_queue_key(name), &fair_timeout_key(name)])
}

/// Lock `id`'s slot is not served here any more: its callers blocked here
/// are told to ask again (where the keys are now), and its memory goes.
pub(super) fn slot_left(ctx: &Context, id: &[u8]) {
    let text = error_text(LockError::SlotNotServed.into());
    for waiter in take_blocked(id, |_| true) {
        unblock(ctx, waiter, Outcome::Failed(text.clone()));
    }
    disarm(ctx, id);
    locks().remove(id);
    unsubscribe_if_idle(ctx);
}
