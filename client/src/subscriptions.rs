//! The client's pub/sub connection. Waiters on the same lock share one
//! channel subscription, reference-counted: the last one to leave
//! unsubscribes. The connection reconnects and resubscribes by itself
//! (RESP3 push messages through redis-rs's connection manager).

use crate::connection::{Deployment, PubSubConnection};
use redis::{PushInfo, PushKind, RedisResult, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::watch;

#[derive(Clone)]
pub(crate) struct Subscriptions {
    channels: Arc<Mutex<HashMap<Vec<u8>, Channel>>>,
    connection: PubSubConnection,
    /// Serialises SUBSCRIBE and UNSUBSCRIBE, so that the server's view
    /// follows the table's even when waiters come and go concurrently.
    server_ops: Arc<tokio::sync::Mutex<()>>,
}

struct Channel {
    /// Live [`Subscription`]s.
    refs: usize,
    /// Whether the server confirmed SUBSCRIBE (and no UNSUBSCRIBE since).
    subscribed: bool,
    /// Bumped on every message on the channel and on every reconnection.
    wake: watch::Sender<u64>,
}

impl Subscriptions {
    /// Opens the pub/sub connection.
    pub async fn connect(deployment: &Deployment) -> RedisResult<Self> {
        let channels: Arc<Mutex<HashMap<Vec<u8>, Channel>>> = Arc::default();
        let table = channels.clone();
        let dispatch = move |push: PushInfo| -> Result<(), std::convert::Infallible> {
            wake_for(&lock(&table), push);
            Ok(())
        };
        let connection = deployment.connect_pubsub(dispatch).await?;
        Ok(Self { channels, connection, server_ops: Arc::default() })
    }

    /// Joins the channel's subscription, subscribing on the server first if
    /// nobody in this client is subscribed yet. Returns once the server has
    /// confirmed, so no message published after this returns is missed.
    pub async fn subscribe(&self, channel: &[u8]) -> RedisResult<Subscription> {
        let _serial = self.server_ops.lock().await;
        let (wake, subscribed) = {
            let mut channels = lock(&self.channels);
            let entry = channels.entry(channel.to_vec()).or_insert_with(|| Channel {
                refs: 0,
                subscribed: false,
                wake: watch::channel(0).0,
            });
            entry.refs += 1;
            (entry.wake.subscribe(), entry.subscribed)
        };
        // From here on, dropping the handle gives the reference back.
        let subscription = Subscription { channel: channel.to_vec(), wake, owner: self.clone() };
        if !subscribed {
            self.connection.clone().subscribe(channel).await?;
            if let Some(entry) = lock(&self.channels).get_mut(channel) {
                entry.subscribed = true;
            }
        }
        Ok(subscription)
    }

    /// Gives back one reference; the last one unsubscribes in the background.
    fn leave(&self, channel: &[u8]) {
        let unused = match lock(&self.channels).get_mut(channel) {
            Some(entry) => {
                entry.refs -= 1;
                entry.refs == 0
            }
            None => false,
        };
        if unused {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                let (this, channel) = (self.clone(), channel.to_vec());
                runtime.spawn(async move { this.unsubscribe_if_unused(channel).await });
            }
        }
    }

    async fn unsubscribe_if_unused(&self, channel: Vec<u8>) {
        let _serial = self.server_ops.lock().await;
        let subscribed = match lock(&self.channels).get(&channel) {
            Some(entry) if entry.refs == 0 => entry.subscribed,
            _ => return, // rejoined meanwhile
        };
        if subscribed {
            // On failure the connection is gone, and the subscription with it.
            let _ = self.connection.clone().unsubscribe(&channel).await;
        }
        let mut channels = lock(&self.channels);
        if channels.get(&channel).is_some_and(|entry| entry.refs == 0) {
            channels.remove(&channel);
        }
    }
}

/// A share of one channel's subscription.
pub(crate) struct Subscription {
    channel: Vec<u8>,
    wake: watch::Receiver<u64>,
    owner: Subscriptions,
}

impl Subscription {
    /// Forgets the wake-ups so far: call it before each acquire attempt.
    pub fn mark_seen(&mut self) {
        self.wake.borrow_and_update();
    }

    /// Completes at the first release message (or reconnection) since the
    /// last [`Subscription::mark_seen`], including one that came before
    /// this call.
    pub async fn released(&mut self) {
        if self.wake.changed().await.is_err() {
            // Cannot happen while this handle holds a reference; never spin.
            std::future::pending::<()>().await;
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.owner.leave(&self.channel);
    }
}

/// Wakes the waiters a push concerns: a channel's on a message, everyone's
/// on a disconnection (messages may have been missed).
fn wake_for(channels: &HashMap<Vec<u8>, Channel>, push: PushInfo) {
    let bump = |wake: &watch::Sender<u64>| wake.send_modify(|n| *n = n.wrapping_add(1));
    match push.kind {
        PushKind::Message | PushKind::SMessage => {
            if let Some(Value::BulkString(channel)) = push.data.first() {
                if let Some(entry) = channels.get(channel.as_slice()) {
                    bump(&entry.wake);
                }
            }
        }
        PushKind::Disconnection => channels.values().for_each(|entry| bump(&entry.wake)),
        _ => {}
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
