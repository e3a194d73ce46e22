//! Worker processes for the fair-lock tests: this test binary started
//! again with [`ROLE_VAR`] set, running only its `worker` test. The test
//! starts waiters in a worker by writing `<waiter> <hold ms>` lines to its
//! stdin; the worker reports on stdout when each waiter asks, is granted
//! and starts its release, with the wall clock (shared by the processes of
//! one machine) in microseconds.

use redis::AsyncCommands;
use rlock_client::{Client, ClientOptions};
use std::collections::HashMap;
use std::io::BufRead;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::mpsc;

/// The worker's role: its waiting mode, `default` or `pubsub`.
pub const ROLE_VAR: &str = "RLOCK_FAIR_WORKER";
const URL_VAR: &str = "RLOCK_URL";
/// The worker's fair wait timeout in ms; the client's default when unset.
const FAIR_WAIT_VAR: &str = "RLOCK_FAIR_WAIT_MS";
/// Marks the workers' report lines. libtest may print on the same line
/// first, so it is matched anywhere in a line.
const MARK: &str = "rlock-fair-event";
/// The fair lock every waiter takes.
pub const LOCK: &str = "fair-processes";
/// Keys the waiters write under the lock: holders inside (must stay at
/// most 1) and the waiters in the order they were granted.
pub const INSIDE: &str = "fair-processes:inside";
pub const GRANTS: &str = "fair-processes:grants";
/// How long a worker may take to start, and a waiter to ask.
const STARTUP: Duration = Duration::from_secs(30);

/// Microseconds since the Unix epoch.
pub fn now_us() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("clock after 1970").as_micros() as i64
}

/// The worker: a client in the role's waiting mode; each line on stdin
/// starts a waiter that takes the fair lock, holds it, and releases it.
/// Returns once stdin closes and every waiter is done.
pub async fn run_worker(role: &str) {
    let url = std::env::var(URL_VAR).expect("RLOCK_URL");
    let mut options = match role {
        "default" => ClientOptions::default(),
        "pubsub" => ClientOptions::default().with_blocking_connections(0),
        other => panic!("unknown worker role {other}"),
    };
    if let Ok(ms) = std::env::var(FAIR_WAIT_VAR) {
        options = options.with_fair_wait_timeout(Duration::from_millis(ms.parse().expect("a number of ms")));
    }
    let client = Client::connect(redis::Client::open(url.as_str()).unwrap(), options).await.unwrap();
    let redis = redis::Client::open(url.as_str()).unwrap();
    let (lines, mut commands) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let _ = lines.send(line.expect("stdin"));
        }
    });
    println!("\n{MARK} ready 0 {}", now_us());
    let mut waiters = Vec::new();
    while let Some(line) = commands.recv().await {
        let mut words = line.split_whitespace().map(|word| word.parse::<u64>().expect("a number"));
        let (waiter, hold) = (words.next().expect("waiter") as usize, words.next().expect("hold ms"));
        let lock = client.fair_lock(LOCK);
        let redis = redis.clone();
        waiters.push(tokio::spawn(async move {
            let mut con = redis.get_multiplexed_async_connection_with_config(&crate::common::patient()).await.unwrap();
            let owner = String::from_utf8(lock.owner().to_vec()).expect("a text owner id");
            println!("\n{MARK} asking {waiter} {} {owner}", now_us());
            let guard = lock.lock().await.unwrap();
            let granted_at = now_us();
            let inside: i64 = con.incr(INSIDE, 1).await.unwrap();
            assert_eq!(inside, 1, "two holders at once");
            let _: () = con.rpush(GRANTS, waiter).await.unwrap();
            println!("\n{MARK} granted {waiter} {granted_at}");
            // Stays inside for `hold`, so that an overlap would show: not a wait.
            tokio::time::sleep(Duration::from_millis(hold)).await;
            let _: i64 = con.decr(INSIDE, 1).await.unwrap();
            println!("\n{MARK} releasing {waiter} {}", now_us());
            guard.unlock().await.unwrap();
        }));
    }
    for waiter in waiters {
        waiter.await.unwrap();
    }
}

/// What the workers reported, by waiter.
#[derive(Default, Debug)]
pub struct Log {
    pub owners: HashMap<usize, String>,
    pub asking: HashMap<usize, i64>,
    /// Grants in the order their reports arrived, with their times.
    pub granted: Vec<(usize, i64)>,
    pub releasing: HashMap<usize, i64>,
    ready: usize,
}

impl Log {
    fn apply(&mut self, line: &str) {
        let Some((_, report)) = line.split_once(MARK) else { return };
        let words: Vec<&str> = report.split_whitespace().collect();
        let (waiter, at) = (words[1].parse().expect("waiter"), words[2].parse().expect("time"));
        match words[0] {
            "ready" => self.ready += 1,
            "asking" => {
                self.asking.insert(waiter, at);
                self.owners.insert(waiter, words[3].to_owned());
            }
            "granted" => self.granted.push((waiter, at)),
            "releasing" => {
                self.releasing.insert(waiter, at);
            }
            other => panic!("unknown report {other}"),
        }
    }

    pub fn granted_at(&self, waiter: usize) -> Option<i64> {
        self.granted.iter().find(|(granted, _)| *granted == waiter).map(|(_, at)| *at)
    }
}

/// Worker processes, killed when dropped (also on panic).
pub struct Workers {
    children: Vec<Option<Child>>,
    stdins: Vec<Option<ChildStdin>>,
    reports: mpsc::UnboundedReceiver<String>,
    pub log: Log,
}

impl Workers {
    /// `count` workers in `role`, ready to take commands.
    pub async fn start(role: &str, fair_wait: Option<Duration>, count: usize, url: &str) -> Self {
        let (lines, reports) = mpsc::unbounded_channel();
        let mut workers = Workers { children: vec![], stdins: vec![], reports, log: Log::default() };
        for _ in 0..count {
            let mut command = tokio::process::Command::new(std::env::current_exe().expect("test binary"));
            command
                .args(["worker", "--exact", "--nocapture", "--test-threads", "1"])
                .env(ROLE_VAR, role)
                .env(URL_VAR, url)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .kill_on_drop(true);
            if let Some(wait) = fair_wait {
                command.env(FAIR_WAIT_VAR, wait.as_millis().to_string());
            }
            let mut child = command.spawn().expect("start a worker process");
            let mut stdout = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
            let lines = lines.clone();
            tokio::spawn(async move {
                while let Ok(Some(line)) = stdout.next_line().await {
                    let _ = lines.send(line);
                }
            });
            workers.stdins.push(child.stdin.take());
            workers.children.push(Some(child));
        }
        let deadline = Instant::now() + STARTUP;
        while workers.log.ready < count {
            assert!(workers.next_report(deadline).await, "the workers did not start within {STARTUP:?}");
        }
        workers
    }

    /// Starts `waiter` in worker `worker`, holding the lock `hold` once
    /// granted; returns its owner id once it has asked.
    pub async fn start_waiter(&mut self, worker: usize, waiter: usize, hold: Duration) -> String {
        let stdin = self.stdins[worker].as_mut().expect("a live worker");
        let line = format!("{waiter} {}\n", hold.as_millis());
        stdin.write_all(line.as_bytes()).await.expect("write to the worker");
        stdin.flush().await.expect("flush");
        let deadline = Instant::now() + STARTUP;
        while !self.log.owners.contains_key(&waiter) {
            assert!(self.next_report(deadline).await, "waiter {waiter} did not ask within {STARTUP:?}");
        }
        self.log.owners[&waiter].clone()
    }

    /// Takes in the reports that have arrived.
    pub fn drain(&mut self) {
        while let Ok(line) = self.reports.try_recv() {
            self.log.apply(&line);
        }
    }

    /// Waits for one report until `deadline`; false if none came.
    pub async fn next_report(&mut self, deadline: Instant) -> bool {
        match tokio::time::timeout_at(deadline.into(), self.reports.recv()).await {
            Ok(Some(line)) => {
                self.log.apply(&line);
                true
            }
            Ok(None) => panic!("every worker exited"),
            Err(_) => false,
        }
    }

    /// SIGKILL, as a crash would; returns once the process is gone.
    pub async fn kill(&mut self, worker: usize) {
        self.stdins[worker] = None;
        let mut child = self.children[worker].take().expect("a live worker");
        child.start_kill().expect("kill the worker");
        child.wait().await.expect("reap the worker");
    }

    /// Closes the live workers' stdin and checks they end well (no
    /// assertion failed in a waiter).
    pub async fn finish(mut self) {
        self.stdins.clear();
        for child in self.children.iter_mut().flatten() {
            let status = tokio::time::timeout(STARTUP, child.wait()).await.expect("the worker exits").unwrap();
            assert!(status.success(), "a worker failed: {status}");
        }
    }
}

/// The lock, its queue and its deadlines as the server sees them, for
/// failure messages.
pub async fn server_view(con: &mut redis::aio::MultiplexedConnection) -> String {
    let status: redis::Value = redis::cmd("RFAIR.STATUS").arg(LOCK).query_async(con).await.unwrap();
    let holders: Vec<(String, i64)> = con.hgetall(LOCK).await.unwrap();
    let pttl: i64 = con.pttl(LOCK).await.unwrap();
    let [queue_key, deadlines_key] = queue_keys();
    let queue: Vec<String> = con.lrange(queue_key, 0, -1).await.unwrap();
    let deadlines: Vec<(String, i64)> = con.zrange_withscores(deadlines_key, 0, -1).await.unwrap();
    let (seconds, micros): (i64, i64) = redis::cmd("TIME").query_async(con).await.unwrap();
    format!(
        "server now {} ms; holders {holders:?} (PTTL {pttl}); queue {queue:?}; deadlines {deadlines:?}; \
         RFAIR.STATUS {status:?}",
        seconds * 1000 + micros / 1000
    )
}

/// The fair lock's queue and deadlines keys (Redisson's).
pub fn queue_keys() -> [Vec<u8>; 2] {
    [rlock_protocol::fair_queue_key(LOCK.as_bytes()), rlock_protocol::fair_timeout_key(LOCK.as_bytes())]
}
