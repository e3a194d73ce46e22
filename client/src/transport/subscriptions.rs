//! The client's release-channel subscriptions. Waiters on the same channel
//! share one subscription; the last one to leave unsubscribes. Each waiter
//! joins with its kind's wake rule: which messages wake it (wakeups.rs). On one server a supervisor task replaces a lost
//! connection, however long the outage, resubscribes every channel and then
//! wakes every waiter, since releases may have been missed; meanwhile
//! waiters wake at their PTTL timer.

use crate::transport::connection::Deployment;
use crate::transport::pubsub::PubSubConnection;
use crate::transport::wakeups::{WaiterId, Waiters, WakeRule};
use redis::aio::AsyncPushSender;
use redis::{PushInfo, PushKind, RedisError, RedisResult, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;
use tokio::sync::{mpsc, watch, Notify};

/// Pause between reconnection attempts: doubles from the first to the last.
const RECONNECT_BACKOFF: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(1));

/// How long a cluster's UNSUBSCRIBE may hold up the pub/sub connection.
const CLUSTER_UNSUBSCRIBE_WAIT: Duration = Duration::from_secs(1);

type Table = Arc<Mutex<HashMap<Vec<u8>, Channel>>>;

#[derive(Clone)]
pub(crate) struct Subscriptions(Arc<Inner>);

struct Inner {
    channels: Table,
    deployment: Deployment,
    /// Held across each SUBSCRIBE and UNSUBSCRIBE, so that the server's view
    /// follows the table's even when waiters come and go concurrently, and
    /// replaced after a disconnection.
    connection: tokio::sync::Mutex<PubSubConnection>,
    /// Where an unsubscription runs, also when the last waiter is dropped
    /// outside the runtime.
    runtime: tokio::runtime::Handle,
}

struct Channel {
    /// SSUBSCRIBE rather than SUBSCRIBE (see [`Deployment::sharded`]).
    sharded: bool,
    server: ServerState,
    waiters: Waiters<Arc<Notify>>,
}

/// The channel's subscription on the current connection.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ServerState {
    Unsubscribed,
    /// SUBSCRIBE sent (or being sent), not confirmed: the server may be
    /// subscribed, so leaving must UNSUBSCRIBE.
    Requested,
    Confirmed,
}

impl Subscriptions {
    /// Opens the pub/sub connection. On one server, also starts its
    /// supervisor, which stops once `closed` turns true.
    pub async fn connect(deployment: &Deployment, closed: watch::Receiver<bool>) -> RedisResult<Self> {
        let channels: Table = Arc::default();
        let (lost_tx, lost_rx) = mpsc::unbounded_channel();
        let lifeline = Lifeline { generation: 0, current: Arc::default(), lost: lost_tx };
        let reconnects = !deployment.is_cluster();
        let handler = push_handler(channels.clone(), reconnects.then(|| lifeline.clone()));
        let connection = deployment.connect_pubsub(handler).await?;
        let inner = Arc::new(Inner {
            channels,
            deployment: deployment.clone(),
            connection: tokio::sync::Mutex::new(connection),
            runtime: tokio::runtime::Handle::current(),
        });
        if reconnects {
            tokio::spawn(supervise(Arc::downgrade(&inner), lifeline, lost_rx, closed));
        }
        Ok(Self(inner))
    }

    /// Joins the subscription to `channel` for the lock `key`, woken as
    /// `rule` says, subscribing on the server first if this client is not
    /// subscribed yet. Returns
    /// once the server has confirmed, so no message published after this
    /// returns is missed, unless the connection is down or slow: then the
    /// waiter relies on its timer until the supervisor resubscribes.
    pub async fn subscribe(&self, key: &[u8], channel: &[u8], rule: WakeRule) -> RedisResult<Subscription> {
        let wake = Arc::new(Notify::new());
        let id = {
            let mut channels = lock(&self.0.channels);
            let entry = channels.entry(channel.to_vec()).or_insert_with(|| Channel {
                sharded: self.0.deployment.sharded(key, channel),
                server: ServerState::Unsubscribed,
                waiters: Waiters::default(),
            });
            entry.waiters.join(wake.clone(), rule)
        };
        // From here on, dropping the handle (a cancelled waiter) leaves.
        let subscription = Subscription { channel: channel.to_vec(), id, wake, owner: self.clone() };
        let mut connection = self.0.connection.lock().await;
        let sharded = match self.update(channel, |entry| (entry.server, entry.sharded)) {
            Some((ServerState::Confirmed, _)) | None => return Ok(subscription),
            Some((_, sharded)) => sharded,
        };
        // Marked before sending: if this future is dropped with the
        // SUBSCRIBE in flight, the last waiter to leave still unsubscribes.
        self.set_server(channel, ServerState::Requested, |_| true);
        match connection.subscribe(channel, sharded).await {
            Ok(()) => self.set_server(channel, ServerState::Confirmed, |now| now == ServerState::Requested),
            // The connection is down (the supervisor resubscribes) or slow
            // (the SUBSCRIBE still lands): wait on the timer meanwhile.
            Err(err) if is_transient(&err) => {}
            Err(err) => {
                self.set_server(channel, ServerState::Unsubscribed, |now| now == ServerState::Requested);
                return Err(err);
            }
        }
        Ok(subscription)
    }

    fn update<T>(&self, channel: &[u8], f: impl FnOnce(&mut Channel) -> T) -> Option<T> {
        lock(&self.0.channels).get_mut(channel).map(f)
    }

    fn set_server(&self, channel: &[u8], state: ServerState, when: impl FnOnce(ServerState) -> bool) {
        self.update(channel, |entry| {
            if when(entry.server) {
                entry.server = state;
            }
        });
    }

    /// Removes a waiter; the last one unsubscribes in the background.
    fn leave(&self, channel: &[u8], id: WaiterId) {
        let unused = self.update(channel, |entry| {
            if let Some(next) = entry.waiters.leave(id) {
                next.notify_one();
            }
            entry.waiters.is_empty()
        });
        if unused == Some(true) {
            let (this, channel) = (self.clone(), channel.to_vec());
            self.0.runtime.spawn(async move { this.unsubscribe_if_unused(channel).await });
        }
    }

    async fn unsubscribe_if_unused(&self, channel: Vec<u8>) {
        let mut connection = self.0.connection.lock().await;
        let subscribed = {
            let mut channels = lock(&self.0.channels);
            match channels.get(&channel) {
                Some(entry) if entry.waiters.is_empty() => {
                    let subscribed = (entry.server != ServerState::Unsubscribed).then_some(entry.sharded);
                    channels.remove(&channel);
                    subscribed
                }
                _ => return, // rejoined meanwhile
            }
        };
        if let Some(sharded) = subscribed {
            // On failure the connection is gone, and the subscription with
            // it; a timed-out UNSUBSCRIBE still lands. In a cluster, a hung
            // node holds it up at most this long (it holds up the others'
            // subscriptions); left unanswered, the subscription may stay,
            // and its messages wake nobody.
            let unsubscribed = connection.unsubscribe(&channel, sharded);
            match self.0.deployment.is_cluster() {
                true => drop(tokio::time::timeout(CLUSTER_UNSUBSCRIBE_WAIT, unsubscribed).await),
                false => drop(unsubscribed.await),
            }
        }
    }

    /// Installs a new connection and subscribes it to every channel in use.
    async fn resubscribe(&self, replacement: PubSubConnection) -> RedisResult<()> {
        let mut connection = self.0.connection.lock().await;
        *connection = replacement;
        let wanted: Vec<(Vec<u8>, bool)> = lock(&self.0.channels)
            .iter_mut()
            .filter(|(_, entry)| !entry.waiters.is_empty())
            .map(|(channel, entry)| {
                entry.server = ServerState::Requested;
                (channel.clone(), entry.sharded)
            })
            .collect();
        for (channel, sharded) in wanted {
            match connection.subscribe(&channel, sharded).await {
                Ok(()) => self.set_server(&channel, ServerState::Confirmed, |now| now == ServerState::Requested),
                Err(err) if is_transient(&err) => return Err(err),
                // Refused (an ACL change?): its waiters keep their timers.
                Err(_) => self.set_server(&channel, ServerState::Unsubscribed, |now| now == ServerState::Requested),
            }
        }
        Ok(())
    }
}

/// Connection errors and timeouts, after which the server may still (or
/// again, after a reconnection) subscribe: not worth failing the waiter.
fn is_transient(err: &RedisError) -> bool {
    err.is_io_error() || err.is_timeout() || err.is_unrecoverable_error()
}

/// A connection's tie to the supervisor: only the current connection's
/// disconnection counts, not a late one from a connection already replaced.
#[derive(Clone)]
struct Lifeline {
    generation: u64,
    current: Arc<AtomicU64>,
    lost: mpsc::UnboundedSender<u64>,
}

impl Lifeline {
    fn is_current(&self) -> bool {
        self.current.load(Ordering::SeqCst) == self.generation
    }

    /// The lifeline of the next connection, which becomes the current one.
    fn next(&self) -> Self {
        let generation = self.current.fetch_add(1, Ordering::SeqCst) + 1;
        Self { generation, ..self.clone() }
    }
}

/// Replaces the connection after each disconnection, with a bounded
/// backoff and no limit on attempts, then wakes every waiter.
async fn supervise(
    subscriptions: Weak<Inner>,
    mut lifeline: Lifeline,
    mut lost_rx: mpsc::UnboundedReceiver<u64>,
    mut closed: watch::Receiver<bool>,
) {
    let mut moves = subscriptions.upgrade().and_then(|inner| inner.deployment.primary_moves());
    loop {
        tokio::select! {
            _ = closed.wait_for(|closed| *closed) => return,
            lost = lost_rx.recv() => match lost {
                Some(generation) if generation == lifeline.generation => {}
                Some(_) => continue,
                None => return,
            },
            // The primary moved: subscribe there, as after a disconnection.
            _ = primary_moved(&mut moves) => {
                let Some(inner) = subscriptions.upgrade() else { return };
                let mut channels = lock(&inner.channels);
                channels.values_mut().for_each(|entry| entry.server = ServerState::Unsubscribed);
            }
        }
        let mut backoff = RECONNECT_BACKOFF.0;
        loop {
            let Some(inner) = subscriptions.upgrade() else { return };
            let this = Subscriptions(inner);
            lifeline = lifeline.next();
            let handler = push_handler(this.0.channels.clone(), Some(lifeline.clone()));
            let reconnect = async {
                let connection = this.0.deployment.connect_pubsub(handler).await?;
                this.resubscribe(connection).await
            };
            let reconnected = tokio::select! {
                _ = closed.wait_for(|closed| *closed) => return,
                reconnected = reconnect => reconnected.is_ok(),
            };
            if reconnected {
                wake_all(&mut lock(&this.0.channels));
                break;
            }
            drop(this);
            tokio::select! {
                _ = closed.wait_for(|closed| *closed) => return,
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(RECONNECT_BACKOFF.1);
        }
    }
}

/// Completes when the primary moves (never without Sentinel).
async fn primary_moved(moves: &mut Option<watch::Receiver<u64>>) {
    let changed = match moves {
        Some(moves) => moves.changed().await.is_ok(),
        None => false,
    };
    if !changed {
        std::future::pending::<()>().await;
    }
}

/// Routes pushes to the waiters they concern. A disconnection wakes
/// everyone (releases may be missed until the resubscription); with a
/// `lifeline` to the supervisor, the current connection's disconnection
/// also marks the subscriptions gone and calls the supervisor.
fn push_handler(channels: Table, lifeline: Option<Lifeline>) -> impl AsyncPushSender {
    move |push: PushInfo| -> Result<(), std::convert::Infallible> {
        let mut channels = lock(&channels);
        match push.kind {
            PushKind::Message | PushKind::SMessage => {
                if let [Value::BulkString(channel), Value::BulkString(message), ..] = push.data.as_slice() {
                    if let Some(entry) = channels.get_mut(channel.as_slice()) {
                        entry.waiters.wake(message).iter().for_each(|wake| wake.notify_one());
                    }
                }
            }
            PushKind::Disconnection => {
                // Checked under the table's lock, which the resubscription
                // takes after making the next connection current.
                if let Some(lifeline) = lifeline.as_ref().filter(|lifeline| lifeline.is_current()) {
                    channels.values_mut().for_each(|entry| entry.server = ServerState::Unsubscribed);
                    let _ = lifeline.lost.send(lifeline.generation);
                }
                wake_all(&mut channels);
            }
            _ => {}
        }
        Ok(())
    }
}

fn wake_all(channels: &mut HashMap<Vec<u8>, Channel>) {
    channels.values_mut().flat_map(|entry| entry.waiters.wake_all()).for_each(|wake| wake.notify_one());
}

/// One waiter's share of a channel's subscription.
pub(crate) struct Subscription {
    channel: Vec<u8>,
    id: WaiterId,
    wake: Arc<Notify>,
    owner: Subscriptions,
}

impl Subscription {
    /// Whether its messages cross the cluster bus (a channel of another
    /// slot than its lock's): the bus drops what it carries while a link
    /// between two nodes reconnects, with no sign to the subscriber.
    pub fn crosses_bus(&self) -> bool {
        self.owner.0.deployment.is_cluster() && self.owner.update(&self.channel, |entry| !entry.sharded) == Some(true)
    }

    /// Call before each acquire attempt: forgets the wake-ups so far; one
    /// handed to this waiter counts as used.
    pub fn mark_seen(&mut self) {
        self.owner.update(&self.channel, |entry| entry.waiters.consume(self.id));
    }

    /// Completes once this waiter is handed a wake-up (a release message
    /// for it, or a reconnection) after the last [`Subscription::mark_seen`],
    /// including one handed before this call.
    pub async fn released(&mut self) {
        loop {
            let notified = self.wake.notified();
            if self.owner.update(&self.channel, |entry| entry.waiters.is_woken(self.id)) == Some(true) {
                return;
            }
            notified.await;
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.owner.leave(&self.channel, self.id);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
