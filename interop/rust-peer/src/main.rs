//! The Rust side of the Java interop suite (`interop/java`): one
//! rlock-client on the server given as the first argument (a cluster when
//! it lists several node URLs, comma-separated), driven by one
//! command a line on stdin, one reply a line on stdout (`ok ...` or
//! `err ...`). Commands run one at a time, in order; a waiting command
//! (`lock`) blocks the ones after it, which is what the Java side relies
//! on to measure hand-offs. Times are Unix microseconds. `fair-task`
//! is the exception: it starts a waiter in the background and replies at
//! once, so several Rust waiters can queue between Java's; `task-wait`
//! collects its outcome.
//!
//! ```text
//! lock KIND NAME              -> ok <acquired_us> <token>     (KIND: lock|fenced|fair)
//! lock lock NAME LEASE_MS     -> ok <acquired_us> 0           (a lease instead of the watchdog; fair too)
//! trylock KIND NAME WAIT_MS   -> ok 1 <token> | ok 0
//! unlock NAME                 -> ok <released_us>   (the time just before the release)
//! held NAME                   -> ok <hold_count of the handle's owner>
//! counter NAME KEY TASKS N    -> ok   (TASKS tasks, N times each: lock, GET KEY, SET KEY+1, unlock)
//! tokens NAME N               -> ok <token> ...   (N fenced acquires and releases)
//! sem-acquire NAME N          -> ok
//! sem-try NAME N WAIT_MS      -> ok 1 | ok 0
//! sem-release NAME N          -> ok
//! psem-acquire NAME LEASE_MS  -> ok <id hex>
//! psem-release ID_HEX         -> ok | err <error>
//! latch-count-down NAME       -> ok
//! latch-wait NAME TIMEOUT_MS  -> ok 1 | ok 0
//! fair-task TAG NAME MODE LOG_KEY HOLD_MS [WAIT_MS]
//!                             -> ok <owner>   (at once; the task runs on)
//! task-wait TAG TIMEOUT_MS    -> ok <task's reply> | err <error or timeout>
//! quit
//! ```
//!
//! `fair-task` starts one fair-lock waiter with a handle (an owner) of its
//! own: `lock()`, or `try_lock(WAIT_MS)` when given, on the blocking client
//! (MODE `block`, rlock-client's default: blocked on the server) or on a
//! second client without blocking connections (MODE `pubsub`: woken on its
//! channel). Once it holds the lock it sleeps HOLD_MS, then, still holding,
//! appends `TAG <acquired_us> <released_us>` to the list LOG_KEY (RPUSH: the
//! grant order, whatever side each waiter is on), then unlocks. Its reply
//! for `task-wait`: `1` (held and logged) or `0` (gave up).

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis::{AsyncCommands, Cmd, Pipeline, RedisFuture, Value};
use rlock_client::{Client, ClientOptions, Error, Guard, Lock, Permit};
use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Plain commands (the counter's GET/SET, the grant log) to one server or a cluster.
#[derive(Clone)]
enum Con {
    Single(MultiplexedConnection),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Con {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Con::Single(c) => c.req_packed_command(cmd),
            Con::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Con::Single(c) => c.req_packed_commands(cmd, offset, count),
            Con::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Con::Single(c) => c.get_db(),
            Con::Cluster(c) => c.get_db(),
        }
    }
}

struct Peer {
    client: Client,
    /// Fair waiters that wait by pub/sub (no blocking connections).
    pubsub: Client,
    con: Con,
    tasks: HashMap<String, tokio::task::JoinHandle<Result<String, Error>>>,
    locks: HashMap<String, Lock>,
    fenced: HashMap<String, Lock>,
    held: HashMap<String, Vec<Guard>>,
    permits: HashMap<String, Permit>,
}

fn now_us() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_micros()
}

type Reply = Result<String, Box<dyn std::error::Error>>;

impl Peer {
    fn lock(&mut self, name: &str) -> Lock {
        self.locks.entry(name.into()).or_insert_with(|| self.client.lock(name)).clone()
    }

    fn fenced(&mut self, name: &str) -> Lock {
        self.fenced.entry(name.into()).or_insert_with(|| self.client.fenced_lock(name)).clone()
    }

    async fn run(&mut self, words: &[&str]) -> Reply {
        let arg = |i: usize| words.get(i).copied().ok_or("missing argument");
        let num = |i: usize| -> Result<u64, Box<dyn std::error::Error>> { Ok(arg(i)?.parse()?) };
        Ok(match words[0] {
            "lock" | "trylock" => {
                let name = arg(2)?;
                let wait = if words[0] == "trylock" { Some(Duration::from_millis(num(3)?)) } else { None };
                let lock = match arg(1)? {
                    "lock" => self.lock(name),
                    "fenced" => self.fenced(name),
                    "fair" => self.client.fair_lock(name),
                    kind => return Err(format!("unknown kind {kind}").into()),
                };
                // A plain or fair lock's command takes a lease.
                let lease = words.get(3).filter(|_| wait.is_none() && matches!(arg(1), Ok("lock" | "fair")));
                let held = match (wait, lease.map(|ms| ms.parse()).transpose()?) {
                    (None, Some(lease)) => Some(lock.lock_with_lease(Duration::from_millis(lease)).await?),
                    (None, None) => Some(lock.lock().await?),
                    (Some(wait), _) => lock.try_lock(wait, None).await?,
                };
                let at = now_us();
                match held {
                    None => "ok 0".into(),
                    Some(held) => {
                        let token = held.token().unwrap_or(0);
                        self.held.entry(name.into()).or_default().push(held);
                        if wait.is_some() {
                            format!("ok 1 {token}")
                        } else {
                            format!("ok {at} {token}")
                        }
                    }
                }
            }
            "unlock" => {
                let held = self.held.get_mut(arg(1)?).and_then(Vec::pop).ok_or("not held here")?;
                let at = now_us();
                held.unlock().await?;
                format!("ok {at}")
            }
            "held" => format!("ok {}", self.lock(arg(1)?).hold_count().await?),
            "counter" => {
                let (name, key) = (arg(1)?, arg(2)?.to_owned());
                let (tasks, rounds) = (num(3)?, num(4)?);
                let con = self.con.clone();
                let mut running = Vec::new();
                for _ in 0..tasks {
                    // One handle a task: each is its own owner.
                    let lock = self.client.lock(name);
                    let (mut con, key) = (con.clone(), key.clone());
                    running.push(tokio::spawn(async move {
                        for _ in 0..rounds {
                            let guard = lock.lock().await?;
                            let value: Option<i64> = con.get(&key).await?;
                            tokio::task::yield_now().await;
                            con.set::<_, _, ()>(&key, value.unwrap_or(0) + 1).await?;
                            guard.unlock().await?;
                        }
                        Ok::<_, Error>(())
                    }));
                }
                for task in running {
                    task.await??;
                }
                "ok".into()
            }
            "tokens" => {
                let lock = self.fenced(arg(1)?);
                let mut tokens = Vec::new();
                for _ in 0..num(2)? {
                    let guard = lock.lock().await?;
                    tokens.push(guard.token().ok_or("a fenced lock has a token")?.to_string());
                    guard.unlock().await?;
                }
                format!("ok {}", tokens.join(" "))
            }
            "sem-acquire" => {
                self.client.semaphore(arg(1)?).acquire(num(2)? as u32).await?;
                "ok".into()
            }
            "sem-try" => {
                let got =
                    self.client.semaphore(arg(1)?).try_acquire(num(2)? as u32, Duration::from_millis(num(3)?)).await?;
                format!("ok {}", u8::from(got))
            }
            "sem-release" => {
                self.client.semaphore(arg(1)?).release(num(2)? as u32).await?;
                "ok".into()
            }
            "psem-acquire" => {
                let permit = self.client.permit_semaphore(arg(1)?).acquire(Duration::from_millis(num(2)?)).await?;
                let id = permit.id_hex();
                self.permits.insert(id.clone(), permit);
                format!("ok {id}")
            }
            "psem-release" => {
                self.permits.remove(arg(1)?).ok_or("no such permit here")?.release().await?;
                "ok".into()
            }
            "latch-count-down" => {
                self.client.count_down_latch(arg(1)?).count_down().await?;
                "ok".into()
            }
            "latch-wait" => {
                let done = self.client.count_down_latch(arg(1)?).wait_timeout(Duration::from_millis(num(2)?)).await?;
                format!("ok {}", u8::from(done))
            }
            "fair-task" => {
                let (tag, name, log_key) = (arg(1)?.to_owned(), arg(2)?, arg(4)?.to_owned());
                let hold = Duration::from_millis(num(5)?);
                let wait = if words.len() > 6 { Some(Duration::from_millis(num(6)?)) } else { None };
                let lock = match arg(3)? {
                    "block" => self.client.fair_lock(name),
                    "pubsub" => self.pubsub.fair_lock(name),
                    mode => return Err(format!("unknown mode {mode}").into()),
                };
                if self.tasks.contains_key(&tag) {
                    return Err(format!("task {tag} exists").into());
                }
                let owner = String::from_utf8_lossy(lock.owner()).into_owned();
                let mut con = self.con.clone();
                let task_tag = tag.clone();
                self.tasks.insert(
                    tag,
                    tokio::spawn(async move {
                        let guard = match wait {
                            None => lock.lock().await?,
                            Some(wait) => match lock.try_lock(wait, None).await? {
                                Some(guard) => guard,
                                None => return Ok("0".into()),
                            },
                        };
                        let acquired = now_us();
                        tokio::time::sleep(hold).await;
                        let entry = format!("{task_tag} {acquired} {}", now_us());
                        con.rpush::<_, _, ()>(&log_key, entry).await?;
                        guard.unlock().await?;
                        Ok("1".into())
                    }),
                );
                format!("ok {owner}")
            }
            "task-wait" => {
                let tag = arg(1)?;
                let task = self.tasks.get_mut(tag).ok_or("no such task")?;
                match tokio::time::timeout(Duration::from_millis(num(2)?), task).await {
                    Err(_) => return Err(format!("task {tag} not done").into()),
                    Ok(done) => {
                        self.tasks.remove(tag);
                        format!("ok {}", done??)
                    }
                }
            }
            other => return Err(format!("unknown command {other}").into()),
        })
    }
}

/// How long a plain command waits for its reply: a loaded test machine
/// answers slower than redis-rs's default 500 ms, and a counter task that
/// fails between its GET and SET fails the test it serves.
const PLAIN_REPLY_TIMEOUT: Duration = Duration::from_secs(10);

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url =
        std::env::args().nth(1).ok_or("usage: rlock-peer redis://host:port/[,redis://host:port...] [watchdog_ms]")?;
    let watchdog_ms: u64 = std::env::args().nth(2).map_or(Ok(3000), |ms| ms.parse())?;
    let options = ClientOptions::default().with_watchdog_timeout(Duration::from_millis(watchdog_ms));
    let urls: Vec<&str> = url.split(',').collect();
    let (client, pubsub, con) = if urls.len() > 1 {
        // A cluster: rlock-client waits by sharded pub/sub there (no blocking mode).
        let client = Client::connect_cluster(urls.clone(), options.clone()).await?;
        let pubsub = Client::connect_cluster(urls.clone(), options.with_blocking_connections(0)).await?;
        let con =
            ClusterClient::builder(urls).response_timeout(PLAIN_REPLY_TIMEOUT).build()?.get_async_connection().await?;
        (client, pubsub, Con::Cluster(con))
    } else {
        let redis = redis::Client::open(url.as_str())?;
        let client = Client::connect(redis.clone(), options.clone()).await?;
        let pubsub = Client::connect(redis.clone(), options.with_blocking_connections(0)).await?;
        let mut con = redis.get_multiplexed_async_connection().await?;
        con.set_response_timeout(PLAIN_REPLY_TIMEOUT);
        (client, pubsub, Con::Single(con))
    };
    let mut peer = Peer {
        client,
        pubsub,
        con,
        tasks: HashMap::new(),
        locks: HashMap::new(),
        fenced: HashMap::new(),
        held: HashMap::new(),
        permits: HashMap::new(),
    };
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut out = tokio::io::stdout();
    out.write_all(b"ready\n").await?;
    out.flush().await?;
    while let Some(line) = lines.next_line().await? {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.is_empty() {
            continue;
        }
        if words[0] == "quit" {
            break;
        }
        let reply = match peer.run(&words).await {
            Ok(reply) => reply,
            Err(e) => format!("err {}", e.to_string().replace('\n', " ")),
        };
        out.write_all(format!("{reply}\n").as_bytes()).await?;
        out.flush().await?;
    }
    Ok(())
}
