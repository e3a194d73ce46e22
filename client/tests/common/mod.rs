//! Helpers shared by the client test files (each uses some of them).
#![allow(dead_code, unused_macros)]

use std::time::Duration;
use testkit::Server;

/// How long a test waits for something that should happen promptly.
pub const PATIENCE: Duration = Duration::from_secs(10);

/// Polls an async condition until it holds, failing after [`PATIENCE`]
/// (or the given patience).
macro_rules! eventually {
    ($what:expr, $check:expr) => {
        eventually!($what, $crate::common::PATIENCE, $check)
    };
    ($what:expr, $patience:expr, $check:expr) => {{
        let deadline = std::time::Instant::now() + $patience;
        while !$check {
            assert!(std::time::Instant::now() < deadline, "timed out waiting for {}", $what);
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    }};
}

/// The name every [`admin`] connection gives itself, so that counts of the
/// client's connections leave them out (also one closed a moment ago that
/// the server has not yet seen go).
pub const ADMIN_NAME: &str = "rlock-test-admin";

/// A plain connection for looking at (or meddling with) the server.
pub async fn admin(server: &Server) -> redis::aio::MultiplexedConnection {
    let mut con = server.client().get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("CLIENT").arg("SETNAME").arg(ADMIN_NAME).query_async(&mut con).await.unwrap();
    con
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
/// its own, and returns once the stall has begun (a PING goes unanswered);
/// the handle completes when it ends.
pub async fn stall(server: &Server, seconds: f64) -> tokio::task::JoinHandle<()> {
    let mut probe = admin(server).await;
    probe.set_response_timeout(Duration::from_millis(20));
    let client = server.client();
    let sleeping = tokio::spawn(async move {
        let mut con = client.get_multiplexed_async_connection().await.unwrap();
        con.set_response_timeout(Duration::from_secs(60));
        let _: () = redis::cmd("DEBUG").arg("SLEEP").arg(seconds).query_async(&mut con).await.unwrap();
    });
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        assert!(std::time::Instant::now() < deadline, "the server never stalled");
        if redis::cmd("PING").query_async::<String>(&mut probe).await.is_err() {
            return sleeping;
        }
    }
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
                let mut con = redis.get_multiplexed_async_connection().await.unwrap();
                for _ in 0..rounds {
                    let guard = lock.lock().await.unwrap();
                    let inside: i64 = con.incr("inside", 1).await.unwrap();
                    assert_eq!(inside, 1, "two holders at once");
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

pub mod hostile;
pub mod recorder;
pub mod stalls;

/// A field of the module's `INFO rlock` section (0 when absent).
pub async fn info(server: &Server, field: &str) -> i64 {
    let info: String = redis::cmd("INFO").arg("rlock").query_async(&mut admin(server).await).await.unwrap();
    let prefix = format!("rlock_{field}:");
    info.lines().find_map(|line| line.strip_prefix(&prefix)).map_or(0, |v| v.trim().parse().unwrap())
}
