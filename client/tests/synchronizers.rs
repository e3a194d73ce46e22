//! The semaphore and the count-down latch of rlock-client against a real
//! server, also across OS processes (workers are this test binary, started
//! again with `RLOCK_WORKER` set, running only the `worker` test).

use redis::AsyncCommands;
use rlock_client::{Client, Error};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use testkit::{eventually, Server};

mod common;

const PROCESSES: usize = 2;
const SEMAPHORE_TASKS: usize = 10;
const ROUNDS: usize = 10;
const PERMITS: u32 = 5;
const LATCH_WAITERS: usize = 25;
/// Each latch waiter's tries before it sleeps: one, and one once subscribed.
const TRIES_BEFORE_WAITING: usize = 2;
/// Time from the last count-down to the last waiter's wake-up: far below
/// the 1 s fallback poll, so every waiter was woken by the message. The
/// figure itself (about 4 ms on a quiet machine) is printed; a tighter
/// bound failed on a loaded machine (10.8 ms), and speed belongs in
/// `make bench`.
const LATCH_RELEASE_BOUND_MS: f64 = 250.0;
/// Keeps the running count and its peak, atomically.
const ENTER: &str = "local n = redis.call('INCR', KEYS[1]) \
    if n > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], n) end return n";

/// Worker entry point; a no-op in the normal test run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker() {
    let (Ok(role), Ok(url)) = (std::env::var("RLOCK_WORKER"), std::env::var("RLOCK_URL")) else {
        return;
    };
    match role.as_str() {
        "semaphore" => enter_through_the_semaphore(&url).await,
        "latch" => wait_for_the_latch(&url).await,
        other => panic!("unknown worker role {other}"),
    }
}

/// SEMAPHORE_TASKS tasks, each entering ROUNDS times through the semaphore,
/// counting who is inside.
async fn enter_through_the_semaphore(url: &str) {
    let client = Client::open(url).await.unwrap();
    let redis = redis::Client::open(url).unwrap();
    let tasks: Vec<_> = (0..SEMAPHORE_TASKS)
        .map(|_| {
            let (semaphore, redis) = (client.semaphore("gate"), redis.clone());
            tokio::spawn(async move {
                let mut con = redis.get_multiplexed_async_connection_with_config(&common::patient()).await.unwrap();
                let enter = redis::Script::new(ENTER);
                for _ in 0..ROUNDS {
                    semaphore.acquire(1).await.unwrap();
                    let _: i64 = enter.key("inside").key("peak").invoke_async(&mut con).await.unwrap();
                    // Stays inside a while, so that an overlap would show: not a wait.
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    let _: i64 = con.decr("inside", 1).await.unwrap();
                    let _: i64 = con.incr("rounds", 1).await.unwrap();
                    semaphore.release(1).await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
}

/// LATCH_WAITERS tasks wait for the latch, then each records when it woke
/// (the machine's clock in microseconds, which the test process shares: a
/// TIME request would add its own round trip to the wake-up).
async fn wait_for_the_latch(url: &str) {
    let client = Client::open(url).await.unwrap();
    let redis = redis::Client::open(url).unwrap();
    let tasks: Vec<_> = (0..LATCH_WAITERS)
        .map(|_| {
            let (latch, redis) = (client.count_down_latch("start"), redis.clone());
            tokio::spawn(async move {
                let mut con = redis.get_multiplexed_async_connection_with_config(&common::patient()).await.unwrap();
                latch.wait().await.unwrap();
                let woken = clock_micros();
                let _: i64 = con.rpush("woken", woken).await.unwrap();
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
}

fn clock_micros() -> i64 {
    let since_epoch = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    i64::try_from(since_epoch.as_micros()).unwrap()
}

async fn command_calls(server: &Server, command: &str) -> usize {
    let info: String =
        redis::cmd("INFO").arg("commandstats").query_async(&mut common::admin(server).await).await.unwrap();
    let prefix = format!("cmdstat_{command}:calls=");
    info.lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |calls| calls.parse().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_semaphore_of_five_admits_at_most_five_of_twenty_tasks_in_two_processes() {
    let server = Server::shared();
    let client = Client::open(&server.url()).await.unwrap();
    let semaphore = client.semaphore("gate");
    assert!(semaphore.try_set_permits(PERMITS).await.unwrap());
    assert!(!semaphore.try_set_permits(PERMITS).await.unwrap(), "set once");
    let mut workers: Vec<_> = (0..PROCESSES).map(|_| common::start_worker("semaphore", &server.url())).collect();
    for worker in &mut workers {
        assert!(worker.wait().await.unwrap().success(), "a worker failed");
    }
    let mut admin = common::admin(&server).await;
    let (peak, rounds): (i64, usize) = redis::pipe().get("peak").get("rounds").query_async(&mut admin).await.unwrap();
    assert!(peak <= i64::from(PERMITS), "{peak} tasks inside at once");
    assert!(peak > 1, "the tasks never overlapped (peak {peak})");
    assert_eq!(rounds, PROCESSES * SEMAPHORE_TASKS * ROUNDS);
    assert_eq!(semaphore.available().await.unwrap(), i64::from(PERMITS), "every permit came back");
    eprintln!("semaphore: at most {peak} of {} tasks inside", PROCESSES * SEMAPHORE_TASKS);
}

#[tokio::test]
async fn a_release_wakes_a_waiter_and_a_missed_message_costs_at_most_the_fallback() {
    let server = Server::shared();
    let client = Client::open(&server.url()).await.unwrap();
    let semaphore = client.semaphore("s");
    assert!(semaphore.try_set_permits(0).await.unwrap());
    let channel = rlock_protocol::semaphore_channel(b"s");

    // Woken by RSEM.RELEASE's message.
    let waiter = tokio::spawn({
        let semaphore = semaphore.clone();
        async move { semaphore.try_acquire(2, testkit::PATIENCE).await.unwrap() }
    });
    eventually!("the waiter subscribed", common::numsub(&server, &channel).await == 1);
    client.semaphore("s").release(1).await.unwrap();
    assert_eq!(semaphore.available().await.unwrap(), 1, "one is not enough for the waiter");
    client.semaphore("s").release(1).await.unwrap();
    assert!(waiter.await.unwrap());
    assert_eq!(semaphore.available().await.unwrap(), 0);

    // Permits added with a plain INCRBY publish nothing: the fallback finds them.
    let waiter = tokio::spawn({
        let semaphore = semaphore.clone();
        async move {
            let started = Instant::now();
            (semaphore.try_acquire(1, testkit::PATIENCE).await.unwrap(), started.elapsed())
        }
    });
    eventually!("the waiter subscribed", common::numsub(&server, &channel).await == 1);
    let _: i64 = common::admin(&server).await.incr("s", 1).await.unwrap();
    let (acquired, waited) = waiter.await.unwrap();
    assert!(acquired, "a missed message left the waiter hanging");
    assert!(waited < testkit::PATIENCE / 2, "took {waited:?}");
}

#[tokio::test]
async fn semaphore_waits_end_in_time_and_leave_nothing_taken() {
    let server = common::stallable_server();
    let client = Client::open(&server.url()).await.unwrap();
    let semaphore = client.semaphore("s");
    assert!(!semaphore.try_acquire(1, Duration::ZERO).await.unwrap(), "a missing semaphore has no permits");
    assert!(semaphore.try_set_permits(1).await.unwrap());
    assert!(!semaphore.try_acquire(2, Duration::from_millis(50)).await.unwrap(), "the wait ran out");

    // A waiter dropped mid-wait takes nothing later.
    let waiting = tokio::time::timeout(Duration::from_millis(50), semaphore.acquire(2));
    assert!(waiting.await.is_err());
    semaphore.add_permits(1).await.unwrap();
    assert_eq!(semaphore.available().await.unwrap(), 2);

    // A take cancelled while the server runs it is given back.
    let stalled = common::stall(&server, 0.3).await;
    let taking = tokio::time::timeout(Duration::from_millis(50), semaphore.try_acquire(2, Duration::ZERO));
    assert!(taking.await.is_err(), "the server is stalled");
    stalled.await.unwrap();
    eventually!("the cancelled take was given back", semaphore.available().await.unwrap() == 2);

    assert_eq!(semaphore.drain().await.unwrap(), 2);
    assert_eq!(semaphore.available().await.unwrap(), 0);
    assert_eq!(semaphore.drain().await.unwrap(), 0);
    semaphore.add_permits(-1).await.unwrap();
    assert_eq!(semaphore.available().await.unwrap(), -1);
}

#[tokio::test]
async fn a_take_whose_reply_is_lost_is_not_sent_again() {
    let server = common::stallable_server();
    let redis = redis::Client::open(server.url()).unwrap();
    let connection = redis::aio::ConnectionManager::new_with_config(
        redis.clone(),
        redis::aio::ConnectionManagerConfig::new().set_response_timeout(Some(Duration::from_millis(100))),
    )
    .await
    .unwrap();
    let client = Client::with_connection(redis, connection, Default::default()).unwrap();
    let semaphore = client.semaphore("s");
    assert!(semaphore.try_set_permits(1).await.unwrap());
    let stalled = common::stall(&server, 0.4).await;
    let taken = semaphore.try_acquire(1, testkit::PATIENCE).await;
    assert!(matches!(taken, Err(Error::OutcomeUnknown(_))), "{taken:?}");
    stalled.await.unwrap();
    // Taken once, by the request whose reply was lost: not again.
    eventually!("the lost take ran", semaphore.available().await.unwrap() == 0);
    assert_eq!(command_calls(&server, "rsem.tryacquire").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_latch_waiters_in_two_processes_are_woken_by_the_count_down() {
    let server = Server::shared();
    let client = Client::open(&server.url()).await.unwrap();
    let latch = client.count_down_latch("start");
    assert!(latch.try_set_count(1).await.unwrap());
    let mut workers: Vec<_> = (0..PROCESSES).map(|_| common::start_worker("latch", &server.url())).collect();
    let waiting = PROCESSES * LATCH_WAITERS * TRIES_BEFORE_WAITING;
    eventually!("every waiter waits", command_calls(&server, "rlatch.count").await >= waiting);
    let mut admin = common::admin(&server).await;
    let counted_down = clock_micros();
    latch.count_down().await.unwrap();
    for worker in &mut workers {
        assert!(worker.wait().await.unwrap().success(), "a worker failed");
    }
    let woken: Vec<i64> = admin.lrange("woken", 0, -1).await.unwrap();
    assert_eq!(woken.len(), PROCESSES * LATCH_WAITERS);
    let last_ms = (woken.iter().max().unwrap() - counted_down) as f64 / 1000.0;
    eprintln!("latch: the last of {} waiters woke {last_ms:.2} ms after the count-down", woken.len());
    assert!(last_ms <= LATCH_RELEASE_BOUND_MS, "the last waiter woke {last_ms:.2} ms after the count-down");
}

#[tokio::test]
async fn latch_counts_down_opens_and_a_delete_opens_it_too() {
    let server = Server::shared();
    let client = Client::open(&server.url()).await.unwrap();
    let latch = client.count_down_latch("l");
    assert_eq!(latch.count().await.unwrap(), 0);
    assert!(latch.wait_timeout(Duration::ZERO).await.unwrap(), "a latch never set is open");
    latch.count_down().await.unwrap();
    assert_eq!(latch.count().await.unwrap(), 0, "a missing latch is left alone");
    assert!(latch.try_set_count(2).await.unwrap());
    assert!(!latch.try_set_count(5).await.unwrap(), "set once");
    assert!(!latch.wait_timeout(Duration::from_millis(50)).await.unwrap(), "the wait ran out");
    latch.count_down().await.unwrap();
    assert_eq!(latch.count().await.unwrap(), 1);

    let waiter = tokio::spawn({
        let latch = latch.clone();
        async move { latch.wait_timeout(testkit::PATIENCE).await.unwrap() }
    });
    let channel = rlock_protocol::count_down_latch_channel(b"l");
    eventually!("the waiter subscribed", common::numsub(&server, &channel).await == 1);
    assert!(latch.delete().await.unwrap());
    assert!(waiter.await.unwrap(), "a delete opens the latch for its waiters");
    assert!(!latch.delete().await.unwrap());

    assert!(latch.try_set_count(1).await.unwrap());
    let waiter = tokio::spawn({
        let latch = latch.clone();
        async move { latch.wait().await }
    });
    eventually!("the waiter subscribed", common::numsub(&server, &channel).await == 1);
    latch.count_down().await.unwrap();
    waiter.await.unwrap().unwrap();
    assert_eq!(latch.count().await.unwrap(), 0);
}
