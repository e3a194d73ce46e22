//! The client's `tracing` events (target `rlock`): an acquire's span and
//! its grant, a release, and a loss, each with the lock's name and owner.

use rlock_client::{Client, ClientOptions};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use testkit::Server;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Every `rlock` event's message and fields, as text.
#[derive(Default, Clone)]
struct Recorder {
    events: Arc<Mutex<Vec<String>>>,
    next_span: Arc<AtomicU64>,
}

struct Text<'a>(&'a mut String);

impl Visit for Text<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!("{}={value:?} ", field.name()));
    }
}

impl Subscriber for Recorder {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.target() == "rlock"
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(self.next_span.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut text = String::new();
        event.record(&mut Text(&mut text));
        self.events.lock().unwrap().push(text);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquire_release_and_loss_are_traced_with_the_lock_and_owner() {
    let recorder = Recorder::default();
    tracing::subscriber::set_global_default(recorder.clone()).unwrap();
    let server = Server::start();
    let options = ClientOptions::default().with_watchdog_timeout(Duration::from_millis(600));
    let client = Client::connect(server.client(), options).await.unwrap();
    let lock = client.lock("traced");
    lock.lock().await.unwrap().unlock().await.unwrap();
    let guard = lock.lock().await.unwrap();
    assert!(lock.force_unlock().await.unwrap());
    tokio::time::timeout(Duration::from_secs(10), guard.lost()).await.expect("lost");
    let events = recorder.events.lock().unwrap().clone();
    let owner = String::from_utf8_lossy(lock.owner()).into_owned();
    let with = |message: &str| events.iter().any(|e| e.contains(&format!("message={message}")));
    assert!(with("granted") && with("released") && with("lock lost"), "{events:#?}");
    let lost = events.iter().find(|e| e.contains("message=lock lost")).unwrap();
    assert!(lost.contains("lock=traced") && lost.contains(&owner), "{lost}");
}
