//! The fenced lock of rlock-client: tokens strictly increase across the
//! lock's whole life (re-entries, releases, an AOF restart, a replica
//! promotion), and a store that refuses stale tokens never takes a write
//! from a holder whose lease ran out.

use redis::AsyncCommands;
use rlock_client::{Client, ClientOptions, Guard, Lock, ReplicaSync};
use std::time::Duration;
use testkit::{eventually, Rng, Server, PATIENCE};

mod common;

const ACQUIRES_PER_PHASE: [usize; 3] = [800, 600, 600];
const MAX_REENTRIES: usize = 3;

/// Random acquires (re-entries up to MAX_REENTRIES deep) and releases
/// until `acquires` tokens were taken; every token must beat `last`.
async fn run_phase(lock: &Lock, rng: &mut Rng, acquires: usize, last: &mut i64) {
    let mut guards: Vec<Guard> = vec![];
    let mut taken = 0;
    while taken < acquires {
        if guards.len() < MAX_REENTRIES && (guards.is_empty() || rng.chance(60)) {
            let guard = lock.lock().await.unwrap();
            assert!(guard.token().unwrap() > *last, "token {} after {last}", guard.token().unwrap());
            *last = guard.token().unwrap();
            guards.push(guard);
            taken += 1;
        } else {
            let index = rng.below(guards.len() as u64) as usize;
            guards.swap_remove(index).unlock().await.unwrap();
        }
    }
    for guard in guards {
        guard.unlock().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_strictly_increase_over_2000_acquires_an_aof_restart_and_a_promotion() {
    let mut primary = Server::builder().config("appendonly", "yes").config("appendfsync", "always").start();
    let replica = Server::shared();
    replica.replicate(&primary);
    let mut rng = Rng::from_env("fenced tokens");
    let mut last = 0;

    // Acquires wait for the replica; on a loaded machine its ack (an
    // fsync'd AOF on the primary) can take longer than the default 1 s.
    let replica_sync = ClientOptions::default().with_replica_sync(ReplicaSync::AllReplicas { timeout: PATIENCE });
    let client = Client::connect(primary.client(), replica_sync).await.unwrap();
    let lock = client.fenced_lock("fenced");
    run_phase(&lock, &mut rng, ACQUIRES_PER_PHASE[0], &mut last).await;

    tokio::task::block_in_place(|| primary.restart());
    replica.replicate(&primary);
    run_phase(&lock, &mut rng, ACQUIRES_PER_PHASE[1], &mut last).await;
    drop(client);

    // Acquires waited for the replica (the client's default replica sync),
    // so it has every token the primary gave.
    let mut promote = common::admin(&replica).await;
    let _: () = redis::cmd("REPLICAOF").arg("NO").arg("ONE").query_async(&mut promote).await.unwrap();
    let client = Client::open(&replica.url()).await.unwrap();
    run_phase(&client.fenced_lock("fenced"), &mut rng, ACQUIRES_PER_PHASE[2], &mut last).await;
    let issued: i64 =
        redis::cmd("RFENCED.TOKEN").arg("fenced").query_async(&mut common::admin(&replica).await).await.unwrap();
    assert_eq!(issued, last, "the last token the client saw is the last one issued");
    assert!(last >= ACQUIRES_PER_PHASE.iter().sum::<usize>() as i64);
}

/// What a storage layer keeps to fence writers: the highest token seen.
#[derive(Default)]
struct FencedStore {
    highest_token: i64,
    value: Option<String>,
}

impl FencedStore {
    /// Takes the write unless a newer holder has written already.
    fn write(&mut self, token: i64, value: &str) -> Result<(), i64> {
        if token < self.highest_token {
            return Err(self.highest_token);
        }
        self.highest_token = token;
        self.value = Some(value.to_string());
        Ok(())
    }
}

#[tokio::test]
async fn a_store_that_refuses_stale_tokens_takes_no_write_from_a_lapsed_holder() {
    let server = Server::shared();
    let client = Client::open(&server.url()).await.unwrap();
    let mut store = FencedStore::default();

    // A holds with a short fixed lease, writes, then stalls past it.
    let a = client.fenced_lock("orders").lock_with_lease(Duration::from_millis(100)).await.unwrap();
    store.write(a.token().unwrap(), "from A").unwrap();
    tokio::time::timeout(testkit::PATIENCE, a.lost()).await.expect("A's lease ran out");
    // The client's estimate ends first; the server's lease right after.
    let mut admin = common::admin(&server).await;
    eventually!("A's lease ran out on the server", !admin.exists::<_, bool>("orders").await.unwrap());

    // B takes over and writes; A wakes up and tries to write.
    let b = client.fenced_lock("orders").try_lock(Duration::ZERO, None).await.unwrap().expect("free");
    assert!(b.token().unwrap() > a.token().unwrap());
    store.write(b.token().unwrap(), "from B").unwrap();
    assert_eq!(store.write(a.token().unwrap(), "late A"), Err(b.token().unwrap()), "a stale token is refused");
    assert_eq!(store.value.as_deref(), Some("from B"));
    assert!(matches!(a.unlock().await, Err(rlock_client::Error::NotOwner)));
    b.unlock().await.unwrap();
}

#[tokio::test]
async fn a_fenced_grant_whose_reply_was_lost_is_resent_under_its_id_and_keeps_its_token() {
    let server = common::stallable_server();
    let redis = redis::Client::open(server.url()).unwrap();
    let config = redis::aio::ConnectionManagerConfig::new().set_response_timeout(Some(Duration::from_millis(100)));
    let connection = redis::aio::ConnectionManager::new_with_config(redis.clone(), config).await.unwrap();
    let client = Client::with_connection(redis, connection, ClientOptions::default()).unwrap();
    let lock = client.fenced_lock("f");
    // Warm: the client knows its replicas, so the acquire is the first request.
    let warm = lock.lock().await.unwrap();
    let first = warm.token().unwrap();
    warm.unlock().await.unwrap();
    let stalled = common::stall(&server, 0.3).await;
    let guard = lock.lock().await.unwrap();
    stalled.await.unwrap();
    let mut admin = common::admin(&server).await;
    let issued: i64 = redis::cmd("RFENCED.TOKEN").arg("f").query_async(&mut admin).await.unwrap();
    assert_eq!((guard.token().unwrap(), issued), (first + 1, first + 1), "one grant, its token replayed to the resend");
    let holds: i64 = admin.hget("f", lock.owner()).await.unwrap();
    assert_eq!(holds, 1, "the resends added no level");
    guard.unlock().await.unwrap();
    let exists: bool = admin.exists("f").await.unwrap();
    assert!(!exists);
}
