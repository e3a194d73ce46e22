//! Requests that must run to their end even when their caller stops
//! waiting (an acquire whose grant must be given back, a release that
//! must update the holds). They run inline, in the caller's task, so the
//! common path spawns nothing; a caller that drops the future before the
//! work ends hands the rest of it to a task of its own.
//!
//! The work advances only while its caller polls: a caller that keeps the
//! future without polling it (parked in a `select!`, say) holds up the
//! lock's other calls, and a grant it is slow to take may come back
//! already lost (see `attempt::grant`). Poll it to the end or drop it.

use crate::engine::lock_state::Registry;
use crate::shared::Shared;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::runtime::Handle;
use tokio::sync::oneshot;

/// Runs `work`, which replies through the sender it is given; resolves to
/// the reply, or `None` when the work ended without one. The work learns
/// that its caller is gone from a failed send, and gives back what it got.
/// Work left when the reply comes (settling in the background, say) goes
/// on in a task of its own. Once the client stopped (closed, or its
/// runtime shut down) nothing runs inline: the caller gets `None` at once.
pub(crate) fn run_to_end<T, F>(shared: &Shared, work: impl FnOnce(oneshot::Sender<T>) -> F) -> RunToEnd<T, F>
where
    F: Future<Output = ()> + Send + 'static,
{
    let (reply_tx, reply_rx) = oneshot::channel();
    RunToEnd {
        reply: Some(reply_rx),
        work: Some(Box::pin(work(reply_tx))),
        runtime: shared.runtime.clone(),
        registry: shared.registry.clone(),
    }
}

pub(crate) struct RunToEnd<T, F: Future<Output = ()> + Send + 'static> {
    reply: Option<oneshot::Receiver<T>>,
    work: Option<Pin<Box<F>>>,
    runtime: Handle,
    /// Stopped once the client's watchdog ended: then the runtime may be
    /// gone, and polling the work inline would panic in its timers.
    registry: Arc<Registry>,
}

impl<T, F: Future<Output = ()> + Send + 'static> Future for RunToEnd<T, F> {
    type Output = Option<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        if self.registry.is_stopped() {
            return Poll::Ready(None); // the work, if any, goes to a task at drop
        }
        // The work's timers and tasks belong to the client's runtime, also
        // when the caller polls from another executor.
        let runtime = self.runtime.clone();
        let _entered = runtime.enter();
        if let Some(work) = self.work.as_mut() {
            if work.as_mut().poll(cx).is_ready() {
                self.work = None;
            }
        }
        let Some(reply) = self.reply.as_mut() else {
            return Poll::Ready(None);
        };
        match Pin::new(reply).poll(cx) {
            Poll::Ready(reply) => {
                self.reply = None;
                Poll::Ready(reply.ok())
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T, F: Future<Output = ()> + Send + 'static> Drop for RunToEnd<T, F> {
    fn drop(&mut self) {
        // The receiver goes first: from now on the work's reply fails.
        drop(self.reply.take());
        if let Some(work) = self.work.take() {
            self.runtime.spawn(work);
        }
    }
}
