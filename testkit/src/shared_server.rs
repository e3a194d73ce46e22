//! Servers reused by the tests of one test binary. A test that cannot tell
//! a fresh server from a flushed and reset one takes one from the pool
//! ([`Server::shared`]) instead of starting its own: a start costs 35–100 ms,
//! and most tests start one. Tests that kill, restart or stop their server,
//! or read the module's own counters (which nothing resets), start their own.

use crate::server::{Server, ServerBuilder};
use redis::Value;
use std::collections::BTreeMap;
use std::ops::Deref;
use std::sync::{Mutex, Once, PoisonError};
use std::time::{Duration, Instant};

/// How long a returned server may take to see its clients gone.
const CLIENTS_GONE_WITHIN: Duration = Duration::from_secs(5);

/// Set, every test starts its own server: to tell whether a failure
/// comes from a reused one.
const FRESH_SERVERS: &str = "RLOCK_TEST_FRESH_SERVERS";

/// Idle servers by the builder that started them (its `Debug` form).
static POOL: Mutex<Vec<(String, Pooled)>> = Mutex::new(Vec::new());
static STOP_AT_EXIT: Once = Once::new();

/// A server of the pool, lent to one test; on drop it is reset and goes
/// back, or, after a panic or a failed reset, it is stopped.
pub struct SharedServer {
    lent: Option<Pooled>,
    key: String,
}

/// A pooled server and what it looked like when it started, to reset it to.
struct Pooled {
    server: Server,
    config: BTreeMap<String, String>,
    users: Vec<String>,
    modules: String,
}

impl Server {
    /// A server with the module loaded, from the pool.
    pub fn shared() -> SharedServer {
        Self::builder().shared()
    }
}

impl ServerBuilder {
    /// A server as this builder starts it, from the pool: one a test that
    /// ended left behind, flushed and reset, or a new one.
    pub fn shared(self) -> SharedServer {
        assert!(self.reusable(), "a cluster node or a wrapped server is not reused: start() it");
        let key = format!("{self:?}");
        let lent = std::iter::from_fn(|| {
            let mut pool = POOL.lock().unwrap_or_else(PoisonError::into_inner);
            pool.iter().position(|(idle_key, _)| *idle_key == key).map(|at| pool.swap_remove(at).1)
        })
        .find(Pooled::still_clean)
        .unwrap_or_else(|| Pooled::start(self));
        SharedServer { lent: Some(lent), key }
    }
}

impl Deref for SharedServer {
    type Target = Server;

    fn deref(&self) -> &Server {
        &self.lent.as_ref().expect("lent until dropped").server
    }
}

impl Drop for SharedServer {
    fn drop(&mut self) {
        let Some(pooled) = self.lent.take() else { return };
        if std::thread::panicking() || std::env::var_os(FRESH_SERVERS).is_some() {
            return; // Server's own drop prints its log after a panic.
        }
        match pooled.reset() {
            Ok(()) => POOL.lock().unwrap_or_else(PoisonError::into_inner).push((std::mem::take(&mut self.key), pooled)),
            Err(why) => eprintln!("testkit: not reusing the server on port {}: {why}", pooled.server.port()),
        }
    }
}

impl Pooled {
    fn start(builder: ServerBuilder) -> Self {
        STOP_AT_EXIT.call_once(|| {
            // SAFETY: registers a plain function with the C runtime's exit.
            assert_eq!(unsafe { atexit(stop_idle_servers) }, 0, "atexit");
        });
        let server = builder.start();
        let mut con = server.connection();
        let config = config(&mut con).unwrap_or_else(|e| panic!("CONFIG GET: {e}"));
        let users = query(&mut con, &["ACL", "LIST"]).unwrap_or_else(|e| panic!("ACL LIST: {e}"));
        let modules = modules(&mut con).unwrap_or_else(|e| panic!("MODULE LIST: {e}"));
        Pooled { server, config, users, modules }
    }

    /// Whether the server is still as its reset left it: a task of the test
    /// that returned it may have outlived the test and written since.
    fn still_clean(&self) -> bool {
        let Ok(mut con) = self.admin() else { return false };
        let clients = query::<String>(&mut con, &["CLIENT", "LIST"]).map(|list| list.lines().count());
        let keys = query::<String>(&mut con, &["INFO", "keyspace"])
            .map(|info| info.lines().filter(|l| l.starts_with("db")).count());
        let clean = matches!((&clients, &keys), (Ok(1), Ok(0)));
        if !clean {
            eprintln!("testkit: not reusing the server on port {}: since its reset, clients {clients:?}, databases with keys {keys:?}", self.server.port());
        }
        clean
    }

    /// Back to how it started: no clients, no data, no scripts, statistics
    /// reset, the configuration and users it started with. What cannot be
    /// put back (a role, a module) is an error: the server is then stopped.
    fn reset(&self) -> Result<(), String> {
        let mut con = self.admin()?;
        let _ = query::<()>(&mut con, &["CLIENT", "UNPAUSE"]);
        let role: Vec<Value> = query(&mut con, &["ROLE"])?;
        if !matches!(role.as_slice(), [Value::BulkString(role), _, Value::Array(replicas)] if role == b"master" && replicas.is_empty())
        {
            return Err(format!("its role changed: {role:?}"));
        }
        if modules(&mut con)? != self.modules {
            return Err("its modules changed".into());
        }
        self.disconnect_others(&mut con)?;
        // Tests that turn active expiry off run with DEBUG enabled; elsewhere this fails, and nothing needs it.
        let _ = query::<()>(&mut con, &["DEBUG", "SET-ACTIVE-EXPIRE", "1"]);
        for command in [
            &["FLUSHALL", "SYNC"][..],
            &["SCRIPT", "FLUSH", "SYNC"],
            &["FUNCTION", "FLUSH", "SYNC"],
            &["CONFIG", "RESETSTAT"],
            &["SLOWLOG", "RESET"],
            &["LATENCY", "RESET"],
            &["ACL", "LOG", "RESET"],
        ] {
            query::<Value>(&mut con, command)?;
        }
        let now = config(&mut con)?;
        for (name, value) in &self.config {
            if now.get(name) != Some(value) {
                query::<()>(&mut con, &["CONFIG", "SET", name, value])?;
            }
        }
        let users: Vec<String> = query(&mut con, &["ACL", "LIST"])?;
        for added in users.iter().filter(|user| !self.users.contains(user)) {
            match added.split(' ').nth(1) {
                Some(name) if name != "default" => query::<()>(&mut con, &["ACL", "DELUSER", name])?,
                _ => return Err(format!("a user changed: {added}")),
            }
        }
        Ok(())
    }

    /// A connection whose every call is bounded: a server a test left
    /// stopped or stalled is not reused, rather than hanging the next test.
    fn admin(&self) -> Result<redis::Connection, String> {
        let con = self.server.client().get_connection_with_timeout(CLIENTS_GONE_WITHIN).map_err(|e| e.to_string())?;
        con.set_read_timeout(Some(CLIENTS_GONE_WITHIN)).map_err(|e| e.to_string())?;
        con.set_write_timeout(Some(CLIENTS_GONE_WITHIN)).map_err(|e| e.to_string())?;
        Ok(con)
    }

    /// Kills every other client (blocked callers and subscribers included)
    /// and waits until the server has seen them go.
    fn disconnect_others(&self, con: &mut redis::Connection) -> Result<(), String> {
        query::<Value>(con, &["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"])?;
        query::<Value>(con, &["CLIENT", "KILL", "TYPE", "pubsub"])?;
        let deadline = Instant::now() + CLIENTS_GONE_WITHIN;
        loop {
            let clients: String = query(con, &["CLIENT", "LIST"])?;
            if clients.lines().count() == 1 {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!("clients still connected:\n{clients}"));
            }
            std::thread::sleep(crate::POLL); // polling CLIENT LIST
        }
    }
}

fn query<T: redis::FromRedisValue>(con: &mut redis::Connection, args: &[&str]) -> Result<T, String> {
    redis::cmd(args[0]).arg(&args[1..]).query(con).map_err(|e| format!("{}: {e}", args.join(" ")))
}

fn config(con: &mut redis::Connection) -> Result<BTreeMap<String, String>, String> {
    query(con, &["CONFIG", "GET", "*"])
}

fn modules(con: &mut redis::Connection) -> Result<String, String> {
    query::<Value>(con, &["MODULE", "LIST"]).map(|listed| format!("{listed:?}"))
}

extern "C" {
    fn atexit(callback: extern "C" fn()) -> std::ffi::c_int;
}

/// Stops the idle servers when the test binary exits: statics are never
/// dropped, and a server left running would outlive the binary.
extern "C" fn stop_idle_servers() {
    if let Ok(mut pool) = POOL.try_lock() {
        pool.clear();
    }
}
