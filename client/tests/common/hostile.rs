//! Helpers of the hostile tests of the inline request path.

use super::admin;
use rlock_client::{Client, ClientOptions, ReplicaSync};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;
use testkit::{eventually, Server};

pub fn options() -> ClientOptions {
    ClientOptions::default().with_watchdog_timeout(Duration::from_millis(600)).with_replica_sync(ReplicaSync::Off)
}

pub async fn client(server: &Server, options: ClientOptions) -> Client {
    Client::connect(server.client(), options).await.unwrap()
}

pub async fn exists(server: &Server, key: &str) -> bool {
    redis::cmd("EXISTS").arg(key).query_async::<i64>(&mut admin(server).await).await.unwrap() == 1
}

pub async fn count_of(server: &Server, key: &str, owner: &[u8]) -> Option<i64> {
    redis::cmd("HGET").arg(key).arg(owner).query_async(&mut admin(server).await).await.unwrap()
}

pub async fn latch_keys(server: &Server) -> usize {
    keys(server, "redisson_unlock_latch:*").await
}

/// Acquire records (`RLOCK.ACQUIRE … ID`) on the server.
pub async fn record_keys(server: &Server) -> usize {
    keys(server, "rlock_acquire_record:*").await
}

async fn keys(server: &Server, pattern: &str) -> usize {
    let keys: Vec<String> = redis::cmd("KEYS").arg(pattern).query_async(&mut admin(server).await).await.unwrap();
    keys.len()
}

pub fn poll_once<F: Future + ?Sized>(future: Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

/// A minimal executor outside any Tokio runtime (as `futures::executor::block_on`).
pub fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
        std::thread::park_timeout(Duration::from_millis(50));
    }
}

/// A `lock()` future polled until its acquire ran on the server, then left
/// unpolled. `None` in the rare case it completed first.
pub async fn park_after_acquire<'a>(
    server: &Server,
    lock: &'a rlock_client::Lock,
) -> Option<Pin<Box<impl Future<Output = rlock_client::Result<rlock_client::Guard>> + 'a>>> {
    let name = String::from_utf8(lock.name().to_vec()).unwrap();
    let mut parked = Box::pin(lock.lock());
    let mut early = None;
    eventually!(
        "the acquire to run",
        count_of(server, &name, lock.owner()).await == Some(1) || {
            early = match poll_once(parked.as_mut()) {
                Poll::Ready(guard) => Some(guard),
                Poll::Pending => None,
            };
            early.is_some()
        }
    );
    if let Some(guard) = early {
        drop(guard);
        eventually!("the early guard released", !exists(server, &name).await);
        return None;
    }
    Some(parked)
}
