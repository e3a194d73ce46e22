//! What every lock handle is inside, whatever its kind: the client, the
//! shared state of its name, owner and kind, and its waiters' channel.

use crate::engine::commands::Status;
use crate::engine::kind::Kind;
use crate::engine::lock_state::{LockId, LockState};
use crate::error::{Error, Result};
use crate::shared::Shared;
use std::sync::Arc;

#[derive(Clone)]
pub(crate) struct Handle {
    shared: Arc<Shared>,
    state: Arc<LockState>,
    pub channel: Arc<[u8]>,
}

impl Handle {
    /// `minted`: `owner` was made for this handle just now.
    pub fn new(shared: Arc<Shared>, name: &[u8], (owner, minted): (&[u8], bool), kind: Kind) -> Self {
        let id = LockId { name: name.into(), owner: owner.into(), kind };
        let channel = id.channel().into();
        let own_id = owner.strip_prefix(shared.id.to_string().as_bytes()).is_some_and(|rest| rest.starts_with(b":"));
        let state = shared.registry.state(id, shared.options.shared_owner_ids && !own_id, minted);
        Self { shared, state, channel }
    }

    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    pub fn state(&self) -> &Arc<LockState> {
        &self.state
    }

    pub fn id(&self) -> &LockId {
        &self.state.id
    }

    /// The kind's STATUS, retrying transient failures: it changes nothing.
    pub async fn status(&self) -> Result<Status> {
        let status = self.id().status();
        let read = || async { Ok(status.query_async(&mut self.shared.connection.clone()).await?) };
        Status::parse(self.shared.options.retry.run(Error::is_transient, read).await?, self.id().kind)
    }

    /// `RLOCK.INSPECT` of the lock's key, retrying transient failures: it
    /// reads only.
    pub async fn inspect(&self) -> Result<redis::Value> {
        let mut inspect = redis::cmd("RLOCK.INSPECT");
        inspect.arg(&*self.id().name);
        let read = || async { Ok(inspect.query_async(&mut self.shared.connection.clone()).await?) };
        self.shared.options.retry.run(Error::is_transient, read).await
    }

    /// The kind's FORCERELEASE, sent once (also in a cluster, see
    /// `transport::cluster::send_once`): when its reply is lost, the error is
    /// returned rather than a second one that could delete a holder who
    /// took the lock in between. True when it deleted the lock.
    pub async fn force_release(&self) -> Result<bool> {
        let retry = &self.shared.options.retry;
        let force_release = self.id().force_release();
        // The holds it may delete: those of this client on the key, of any
        // owner and kind, taken before it is sent (a grant after it, in a
        // race, is a new hold and stays).
        let before: Vec<_> = self
            .shared
            .registry
            .named(&self.id().name)
            .into_iter()
            .map(|state| {
                let incarnation = state.read(|holds| holds.incarnation());
                (state, incarnation)
            })
            .collect();
        let once = || self.shared.connection.once(self.shared.options.cluster_reply_timeout);
        let send = || async { Ok(force_release.query_async::<i64>(&mut once()).await?) };
        // Refused connections never carried the command: only those are sent again.
        let deleted = retry.run(Error::is_connection_refusal, send).await?;
        if deleted == 1 {
            for (state, incarnation) in before {
                state.lose_incarnation(incarnation);
            }
        }
        Ok(deleted == 1)
    }
}
