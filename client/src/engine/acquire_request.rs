//! An acquire request on the shared connection: its command, and what makes
//! it safe to send again after a lost reply ([`Naming`]).
//!
//! A plain lock of an owner only this client counts names that count
//! (`HOLDS n`): the server answers a resend from the owner's count, with
//! nothing to record and delete. Other acquires name themselves (`ID`, see
//! `named`). The first send falls back where the server asks: a module
//! without `HOLDS` (then `ID`), an ACL that refuses the record key (then
//! neither), and `STALEHOLDS`: this client's holds ended on the server, so
//! they end here too, and the owner's count is sent once more.

use crate::engine::commands::FullReply;
use crate::engine::kind::Kind;
use crate::engine::lock_state::{LockId, LockState};
use crate::engine::named::{refuses_record, Named};
use crate::engine::protocol::is_syntax_error;
use crate::error::{Error, Result};
use crate::shared::Shared;
use crate::transport::connection::{within, Connection, ReplyBound};
use crate::transport::latch_sweeper::LatchSweeper;
use crate::transport::replica_sync::Plan;
use redis::aio::ConnectionLike;
use redis::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// What one acquire request came to.
pub(crate) enum Sent {
    Refused {
        retry_ms: i64,
    },
    /// `observed`: the owner's count right after the grant; `token`: a
    /// fenced lock's fencing token (`None` for other kinds); `lease_start`: when
    /// its lease started at the earliest, by this clock; `lease_left`: the
    /// lease the reply read, `(sent at, left)`, for a grant replayed to a
    /// first send (`HOLDS`: a level this client gave up on its clock that
    /// the server still counts).
    Granted {
        observed: i64,
        token: Option<i64>,
        lease_start: Instant,
        lease_left: Option<(Instant, Duration)>,
    },
    /// Granted, but fewer replicas than required acknowledged it.
    Unsynced {
        acknowledged: i64,
        required: u32,
    },
}

/// What makes an acquire safe to send again: a request id (`ID`), the
/// owner's levels as counted here (`HOLDS`), or neither (sent once).
pub(crate) struct Naming {
    pub named: Option<Named>,
    pub holds: Option<usize>,
}

impl Naming {
    /// For an acquire of `state` sent on `connection` while this client
    /// counts `counted` levels: `HOLDS` for a plain lock whose owner's
    /// levels on the server are exactly the ones counted here (see
    /// [`Holds::counted_exactly`](crate::engine::holds::Holds::counted_exactly):
    /// no level given up on this clock that the server may count still, no
    /// other client counting the owner), and whose count no fair or fenced
    /// handle of the same name and owner id adds to; not for a blocking
    /// call (cancelled by its id); where the module takes it. Else an id
    /// where the module can record one: the acquire then runs (a fresh
    /// lease, a re-entry), where `HOLDS` would take a level left behind for
    /// its grant.
    pub fn new(
        shared: &Shared,
        connection: &Connection,
        state: &LockState,
        (counted, blocking): (usize, bool),
    ) -> Self {
        let counts = state.id.kind == Kind::Plain
            && !blocking
            && state.read(|holds| holds.counted_exactly())
            && !shared.holds_refused.load(Ordering::Relaxed)
            && !state.counted_with_others();
        match counts {
            true => Self { named: None, holds: Some(counted) },
            false => Self { named: Named::new(&shared.record_refused, connection, &state.id), holds: None },
        }
    }

    /// Whether a resend learns the first send's outcome.
    pub fn resendable(&self) -> bool {
        self.named.is_some() || self.holds.is_some()
    }

    pub fn parts(&self) -> (Option<&Named>, Option<usize>) {
        (self.named.as_ref(), self.holds)
    }

    /// The outcome is in: an id's record may go.
    pub fn done(&mut self, sweeper: &LatchSweeper) {
        if let Some(named) = self.named.take() {
            named.done(sweeper);
        }
    }
}

/// The first send of an acquire on the shared connection, with the
/// fallbacks above (each at most once). `reply_bound`: how long a
/// resendable request waits for its node (see [`within`]). `naming` is
/// left as last sent, for a resend.
pub(crate) async fn send_first(
    shared: &Shared,
    state: &LockState,
    (connection, reply_bound): (&mut Connection, Duration),
    call: (i64, Option<i64>, Instant),
    (naming, sync): (&mut Naming, Option<&Plan>),
) -> Result<Sent> {
    let id = &state.id;
    let mut sent = send_named(connection, (id, call, reply_bound), naming, sync).await;
    if naming.holds.is_some() && sent.as_ref().is_err_and(|err| refuses_holds(&shared.holds_refused, err)) {
        *naming = Naming { named: Named::new(&shared.record_refused, connection, id), holds: None };
        sent = send_named(connection, (id, call, reply_bound), naming, sync).await;
    }
    if naming.named.is_some() && sent.as_ref().is_err_and(|err| refuses_record(&shared.record_refused, err)) {
        naming.named = None;
        sent = send_named(connection, (id, call, reply_bound), naming, sync).await;
    }
    if let Some(held) = sent.as_ref().err().and_then(stale_holds) {
        state.update(|holds| ((), holds.refused()));
        naming.holds = Some(held);
        sent = send_named(connection, (id, call, reply_bound), naming, sync).await;
    }
    sent
}

/// The acquire `naming` names, sent once. With `HOLDS`, the short reply
/// says all (the owner's count after a grant is one more than sent), and
/// costs the client a ninth of the full one to read.
async fn send_named(
    connection: &mut Connection,
    (id, (lease_ms, queue_wait_ms, requested_at), reply_bound): (&LockId, (i64, Option<i64>, Instant), Duration),
    naming: &Naming,
    sync: Option<&Plan>,
) -> Result<Sent> {
    let form = match naming.holds {
        Some(holds) => ReplyForm::Short { holds },
        None => ReplyForm::Full,
    };
    let acquire = acquire_command(id, lease_ms, (queue_wait_ms, None), naming.parts(), form);
    let request = (&acquire, form, requested_at);
    match naming.resendable() {
        true => send(connection, id, request, (sync, &connection.reply_bound(reply_bound))).await,
        // Neither named nor counted: nothing may send it again (see `transport::cluster::send_once`).
        false => send(&mut connection.once(reply_bound), id, request, (sync, &None)).await,
    }
}

/// The levels a `STALEHOLDS` refusal says the owner holds.
pub(crate) fn stale_holds(err: &Error) -> Option<usize> {
    let Error::Redis(err) = err else { return None };
    let detail = err.detail().filter(|_| err.code() == Some("STALEHOLDS"))?;
    detail.strip_prefix("the owner holds ")?.split(' ').next()?.parse().ok()
}

/// Whether `err` is a module's refusal of `HOLDS` (one older than it, whose
/// acquire knows no such keyword): the client then names its acquires
/// (sets `refused`).
fn refuses_holds(refused: &AtomicBool, err: &Error) -> bool {
    let refusal = matches!(err, Error::Redis(err) if is_syntax_error(err));
    if refusal {
        refused.store(true, Ordering::Relaxed);
    }
    refusal
}

/// Which reply an acquire asks for.
#[derive(Clone, Copy)]
pub(crate) enum ReplyForm {
    /// Nil or the holder's PTTL (or a replay in full), for a `HOLDS holds`
    /// acquire's first send.
    Short { holds: usize },
    /// `REPLY FULL`: a resend's (a replayed grant's lease left is read),
    /// and every acquire without `HOLDS`.
    Full,
}

/// The acquire of `id` with the reply `form`, and what makes it safe to
/// send again (see [`Naming`]). `block_ms`: a blocking call (a plain
/// lock's `WAIT`, a fair waiter's `BLOCK` after its queue wait).
pub(crate) fn acquire_command(
    id: &LockId,
    lease_ms: i64,
    (queue_wait_ms, block_ms): (Option<i64>, Option<i64>),
    (named, holds): (Option<&Named>, Option<usize>),
    form: ReplyForm,
) -> redis::Cmd {
    let mut acquire = id.acquire(lease_ms, queue_wait_ms);
    if let Some(block_ms) = block_ms {
        acquire.arg(if id.kind == Kind::Fair { "BLOCK" } else { "WAIT" }).arg(block_ms);
    }
    if let Some(named) = named {
        acquire.arg("ID").arg(named.request_id.as_bytes());
    }
    if let Some(holds) = holds {
        acquire.arg("HOLDS").arg(holds);
    }
    if let ReplyForm::Full = form {
        acquire.arg("REPLY").arg("FULL");
    }
    acquire
}

/// The `acquire` (`requested_at`: when it is sent); then WAIT when
/// replicas must acknowledge (see [`acquire_and_wait`]). The reply gives
/// the owner's count after a grant.
async fn send(
    connection: &mut (impl ConnectionLike + Send),
    id: &LockId,
    (acquire, form, requested_at): (&redis::Cmd, ReplyForm, Instant),
    (sync, bound): (Option<&Plan>, &ReplyBound),
) -> Result<Sent> {
    let (reply, acknowledged) = acquire_and_wait(connection, id, (acquire, form), (sync, bound)).await?;
    if !reply.granted {
        return Ok(Sent::Refused { retry_ms: reply.lease_ms });
    }
    if let (Some(plan), Some(acknowledged)) = (sync, acknowledged) {
        if acknowledged < i64::from(plan.required) {
            return Ok(Sent::Unsynced { acknowledged, required: plan.required });
        }
    }
    // The short form reads a lease only from a replay, replied in full.
    let replayed = matches!(form, ReplyForm::Short { .. });
    let lease_left = u64::try_from(reply.lease_ms).ok().filter(|_| replayed);
    let lease_left = lease_left.map(|ms| (requested_at, Duration::from_millis(ms)));
    Ok(Sent::Granted { observed: reply.holds, token: reply.token, lease_start: requested_at, lease_left })
}

/// `acquire`, then `WAIT` when replicas must acknowledge, in one pipeline:
/// one round trip, on one node (in a cluster the pipeline goes where its
/// acquire goes, so the `WAIT` counts the replicas of the node that ran
/// it, right after it). Waited for at most `bound` (see [`within`]),
/// longer behind other synced acquires (see [`Plan::in_line`]). The
/// acquire's reply (sent in `form`), and the `WAIT`'s acknowledgements
/// after a grant.
pub(crate) async fn acquire_and_wait(
    connection: &mut (impl ConnectionLike + Send),
    id: &LockId,
    (acquire, form): (&redis::Cmd, ReplyForm),
    (sync, bound): (Option<&Plan>, &ReplyBound),
) -> Result<(FullReply, Option<i64>)> {
    let parse = |reply: &Value| match form {
        ReplyForm::Short { holds } => FullReply::from_short(reply, holds),
        ReplyForm::Full => FullReply::parse(reply, id.kind),
    };
    let Some(plan) = sync else {
        // Alone: no pipeline to build, and the reply read where it lies.
        let reply: Value = within(bound, &id.name, acquire.query_async(connection)).await?;
        return Ok((parse(&reply)?, None));
    };
    let mut pipe = redis::pipe();
    pipe.add_command(acquire.clone()).add_command(plan.wait());
    let (_in_flight, bound) = plan.in_line(bound);
    let replies: Vec<Value> = within(&bound, &id.name, pipe.ignore_errors().query_async(connection)).await?;
    if let Some(Value::ServerError(err)) = replies.iter().find(|reply| matches!(reply, Value::ServerError(_))) {
        return Err(redis::RedisError::from(err.clone()).into());
    }
    let unexpected = || Error::UnexpectedReply(format!("{replies:?}"));
    let reply = parse(replies.first().ok_or_else(unexpected)?)?;
    let acknowledged = match reply.granted {
        true => Some(
            redis::from_redis_value_ref(replies.last().ok_or_else(unexpected)?)
                .map_err(|err| Error::UnexpectedReply(err.to_string()))?,
        ),
        false => None,
    };
    Ok((reply, acknowledged))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error reply as redis-rs reads it off the wire.
    fn reply(line: &str) -> Error {
        match redis::parse_redis_value(format!("-{line}\r\n").as_bytes()) {
            Ok(Value::ServerError(err)) => Error::Redis(err.into()),
            other => panic!("not an error reply: {other:?}"),
        }
    }

    #[test]
    fn stale_holds_are_read_from_the_refusal() {
        let cases = [
            ("STALEHOLDS the owner holds 0 levels, not 2 or one more", Some(0)),
            ("STALEHOLDS the owner holds 3 levels, not 1 or one more", Some(3)),
            ("STALEHOLDS something else", None),
            ("ERR the owner holds 0 levels", None),
            ("NOPERM this user has no permissions to access the acquire record key 'k'", None),
        ];
        for (line, held) in cases {
            assert_eq!(stale_holds(&reply(line)), held, "{line}");
        }
    }

    #[test]
    fn only_a_syntax_error_is_a_module_without_holds() {
        // What a module older than HOLDS replies to it (its acquire's options).
        let older = "ERR syntax error: after owner and lease_ms, only WAIT wait_ms, ID request_id \
                     [PX window_ms] and REPLY FULL, each once; syntax: RLOCK.ACQUIRE key owner [lease_ms]";
        let cases = [
            (older, true),
            ("STALEHOLDS the owner holds 0 levels, not 2 or one more", false),
            ("ERR n must be a non-negative integer", false),
            ("WRONGTYPE Operation against a key holding the wrong kind of value", false),
        ];
        for (line, refusal) in cases {
            let refused = AtomicBool::new(false);
            assert_eq!(refuses_holds(&refused, &reply(line)), refusal, "{line}");
            assert_eq!(refused.load(Ordering::Relaxed), refusal, "{line}");
        }
    }
}
