//! The client's `tracing` events (target `rlock`): an acquire's span and
//! its grant, a release, and a loss, each with the lock's name and owner.

mod common;

use common::recorder::Recorder;
use rlock_client::{Client, ClientOptions};
use std::time::Duration;
use testkit::Server;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acquire_release_and_loss_are_traced_with_the_lock_and_owner() {
    let recorder = Recorder::default();
    tracing::subscriber::set_global_default(recorder.clone()).unwrap();
    let server = Server::shared();
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
