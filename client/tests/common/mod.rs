//! Helpers shared by the client test files (each uses some of them).
#![allow(dead_code)]

use std::time::Duration;
use testkit::Server;

/// The name every [`admin`] connection gives itself, so that counts of the
/// client's connections leave them out (also one closed a moment ago that
/// the server has not yet seen go).
pub const ADMIN_NAME: &str = "rlock-test-admin";

/// A plain connection for looking at (or meddling with) the server; it
/// waits out a server a test stalls (`DEBUG SLEEP`).
pub async fn admin(server: &Server) -> redis::aio::MultiplexedConnection {
    let mut con = server.client().get_multiplexed_async_connection_with_config(&patient()).await.unwrap();
    let _: () = redis::cmd("CLIENT").arg("SETNAME").arg(ADMIN_NAME).query_async(&mut con).await.unwrap();
    con
}

/// A connection config that waits out a loaded machine: redis-rs's own
/// default (500 ms) timed a counter's SET out under the parallel suite,
/// and the task died inside the critical section; its 1 s to connect timed
/// `admin` out when this process stalled for about a second
/// (`hostile_stalls` under a SIGSTOP of 1 s).
pub fn patient() -> redis::AsyncConnectionConfig {
    redis::AsyncConnectionConfig::new()
        .set_response_timeout(Some(testkit::PATIENCE))
        .set_connection_timeout(Some(testkit::PATIENCE))
}

/// Subscribers of `channel` on the server.
pub async fn numsub(server: &Server, channel: &[u8]) -> i64 {
    let (_, count): (Vec<u8>, i64) =
        redis::cmd("PUBSUB").arg("NUMSUB").arg(channel).query_async(&mut admin(server).await).await.unwrap();
    count
}

/// A server that allows `DEBUG SLEEP`.
pub fn stallable_server() -> Server {
    Server::builder().config("enable-debug-command", "yes").start()
}

/// Stalls the server for `seconds` with `DEBUG SLEEP` on a connection of
/// its own (one the server has taken: it answered a PING on it), and
/// returns once the command is in the server's socket: any command sent
/// from then on waits for the stall's end (the server reads that socket
/// no later than the next one, and sends replies only after each round of
/// commands). The handle completes when the stall ends.
pub async fn stall(server: &Server, seconds: f64) -> tokio::task::JoinHandle<()> {
    use std::io::{Read, Write};
    let mut sleeper = std::net::TcpStream::connect(("127.0.0.1", server.port())).expect("connect");
    let reply = |sleeper: &mut std::net::TcpStream, expected: &[u8]| {
        let mut reply = vec![0; expected.len()];
        sleeper.read_exact(&mut reply).expect("a reply");
        assert_eq!(reply, expected, "{}", String::from_utf8_lossy(&reply));
    };
    sleeper.write_all(b"PING\r\n").expect("PING sent");
    reply(&mut sleeper, b"+PONG\r\n");
    sleeper.write_all(format!("DEBUG SLEEP {seconds}\r\n").as_bytes()).expect("DEBUG SLEEP sent");
    tokio::task::spawn_blocking(move || reply(&mut sleeper, b"+OK\r\n"))
}

/// Postpones every client's commands for `seconds` (`CLIENT PAUSE … ALL`)
/// and returns once the server has answered the pause: no command sent
/// from then on runs before the pause ends. Unlike [`stall`], whose
/// `DEBUG SLEEP` another connection's command can overtake, this leaves no
/// race; the server's timers go on.
pub async fn pause_all(server: &Server, seconds: f64) {
    let ms = (seconds * 1000.0) as u64;
    let _: () =
        redis::cmd("CLIENT").arg("PAUSE").arg(ms).arg("ALL").query_async(&mut admin(server).await).await.unwrap();
}

/// This test binary started again as a worker process in `role`: it runs
/// only its `worker` test, which reads `RLOCK_WORKER` and `RLOCK_URL`.
/// Killed when dropped.
pub fn start_worker(role: &str, url: &str) -> tokio::process::Child {
    tokio::process::Command::new(std::env::current_exe().expect("test binary"))
        .args(["worker", "--exact", "--nocapture", "--test-threads", "1"])
        .env("RLOCK_WORKER", role)
        .env("RLOCK_URL", url)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start a worker process")
}

/// `tasks` tasks each take `client`'s lock "shared" `rounds` times and
/// check, with a counter, that no other holder is inside meanwhile.
pub async fn take_turns_exclusively(
    client: &rlock_client::Client,
    server: &Server,
    tasks: usize,
    rounds: usize,
    hold: Duration,
) {
    use redis::AsyncCommands;
    let tasks: Vec<_> = (0..tasks)
        .map(|_| {
            let (lock, redis) = (client.lock("shared"), server.client());
            tokio::spawn(async move {
                let mut con = redis.get_multiplexed_async_connection_with_config(&patient()).await.unwrap();
                for _ in 0..rounds {
                    let guard = lock.lock().await.unwrap();
                    let inside: i64 = con.incr("inside", 1).await.unwrap();
                    assert_eq!(inside, 1, "two holders at once");
                    // Stays inside for `hold`, so that an overlap would show: not a wait.
                    tokio::time::sleep(hold).await;
                    let _: i64 = con.decr("inside", 1).await.unwrap();
                    guard.unlock().await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
}

pub mod clients;
pub mod counts;
pub mod hostile;
pub mod recorder;
pub mod stalls;

/// A watchdog timeout for the tests that keep a lock through renewals: a
/// round every 2 s and 4 s of slack before a lease ends. Under the suite's
/// load a process can get almost no CPU for 2-3 s (a probe sleeping 10 ms
/// overslept by 0.9, 1.0 and 0.5 s within 3 s): a 2 s timeout (1.33 s of
/// slack) lost leases in three binaries at once, and 4 s lost one too.
pub const KEEPING_WATCHDOG: Duration = Duration::from_secs(6);

/// Waits until the server shows `count` renewals of `key`'s lease, each
/// seen as its PTTL rising between two looks, and returns the PTTL just
/// after the last one. Fails as soon as the key has no lease or is gone
/// (its lease ran out: nobody renewed it in time), or when a renewal takes
/// longer than [`testkit::PATIENCE`].
pub async fn renewals(server: &Server, key: &str, count: usize) -> Duration {
    async fn pttl(con: &mut redis::aio::MultiplexedConnection, key: &str) -> i64 {
        redis::cmd("PTTL").arg(key).query_async(con).await.unwrap()
    }
    let mut con = admin(server).await;
    let mut last = pttl(&mut con, key).await;
    for renewal in 1..=count {
        let deadline = std::time::Instant::now() + testkit::PATIENCE;
        loop {
            let now = pttl(&mut con, key).await;
            assert!(now > 0, "`{key}` has no lease left (PTTL {now}) waiting for renewal {renewal} of {count}");
            let renewed = now > last;
            last = now;
            if renewed {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "renewal {renewal} of `{key}` not seen within PATIENCE");
            tokio::time::sleep(testkit::POLL).await;
        }
    }
    Duration::from_millis(last as u64)
}

/// A counter of the module's `INFO rlock` section (0 when absent).
pub async fn info(server: &Server, name: &str) -> i64 {
    testkit::rlock_info_async(&mut admin(server).await, name).await
}
