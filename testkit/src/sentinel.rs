//! A primary with two replicas and three Sentinels, on loopback, for
//! failover tests and the fault suite. Replicas and Sentinels connect from
//! 127.0.0.3 (`bind-source-addr`, [`PEER_SOURCE`]), clients from
//! 127.0.0.1, so cutting the primary off from the rest but not from its
//! clients is two iptables rules on its port.

use crate::failover::DOWN_AFTER_MS;
use crate::server::{free_port, server_bin, Server, ServerBuilder};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The name Sentinel monitors the primary under.
pub const MASTER: &str = "m";
/// The address replicas and Sentinels connect from.
pub const PEER_SOURCE: &str = "127.0.0.3";
const READY: Duration = Duration::from_secs(20);

/// A primary, two replicas and three Sentinels.
pub struct SentinelGroup {
    /// The primary at the start is `servers[0]`.
    pub servers: Vec<Server>,
    sentinels: Vec<Sentinel>,
}

impl SentinelGroup {
    /// Starts the servers with `module_args` and `config` (each `--name
    /// value`), then the Sentinels, and waits until every Sentinel knows
    /// both replicas and the other Sentinels.
    pub fn start(module_args: &[String], config: &[(String, String)]) -> SentinelGroup {
        let builder = || {
            let mut builder: ServerBuilder = Server::builder()
                .config("protected-mode", "no")
                .config("bind-source-addr", PEER_SOURCE)
                .config("replica-announce-ip", "127.0.0.1");
            for arg in module_args {
                builder = builder.module_arg(arg);
            }
            for (name, value) in config {
                builder = builder.config(name, value);
            }
            builder
        };
        let servers: Vec<Server> = (0..3).map(|_| builder().start()).collect();
        for replica in &servers[1..] {
            replica.replicate(&servers[0]);
        }
        let sentinels = (0..3).map(|_| Sentinel::start(servers[0].port())).collect();
        let group = SentinelGroup { servers, sentinels };
        crate::eventually("the Sentinels to know each other and the replicas", READY, || {
            group.sentinels.iter().all(|sentinel| sentinel.ready())
        });
        group
    }

    /// The primary as the Sentinels' majority names it now.
    pub fn primary_port(&self) -> Option<u16> {
        primary_named_by(&self.sentinel_ports())
    }

    pub fn sentinel_ports(&self) -> Vec<u16> {
        self.sentinels.iter().map(|sentinel| sentinel.port).collect()
    }

    /// The Sentinels' logs, for a failed run.
    pub fn sentinel_logs(&self) -> String {
        self.sentinels.iter().map(|sentinel| std::fs::read_to_string(sentinel.log()).unwrap_or_default()).collect()
    }
}

/// One `redis-server --sentinel` with its own directory.
struct Sentinel {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Sentinel {
    fn start(primary_port: u16) -> Sentinel {
        let dir = tempfile::Builder::new().prefix("rlock-sentinel-").tempdir().expect("temp dir");
        let port = free_port();
        let conf = dir.path().join("sentinel.conf");
        let text = format!(
            "port {port}\nbind 127.0.0.1\nprotected-mode no\nbind-source-addr {PEER_SOURCE}\n\
             dir {dir}\nlogfile {log}\n\
             sentinel announce-ip 127.0.0.1\nsentinel monitor {MASTER} 127.0.0.1 {primary_port} 2\n\
             sentinel down-after-milliseconds {MASTER} {DOWN_AFTER_MS}\n\
             sentinel failover-timeout {MASTER} 4000\nsentinel parallel-syncs {MASTER} 2\n",
            dir = dir.path().display(),
            log = dir.path().join("sentinel.log").display(),
        );
        std::fs::write(&conf, text).expect("sentinel.conf");
        let child = Command::new(server_bin())
            .arg(&conf)
            .arg("--sentinel")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start a Sentinel");
        Sentinel { child, port, dir }
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("sentinel.log")
    }

    fn ready(&self) -> bool {
        let count = |what: &str| {
            sentinel_query::<Vec<redis::Value>>(self.port, &["SENTINEL", what, MASTER]).map_or(0, |v| v.len())
        };
        count("replicas") == 2 && count("sentinels") == 2
    }
}

/// The primary a majority of the Sentinels on `ports` name now.
pub fn primary_named_by(ports: &[u16]) -> Option<u16> {
    let named: Vec<u16> = ports
        .iter()
        .filter_map(|port| sentinel_query::<Vec<String>>(*port, &["SENTINEL", "get-master-addr-by-name", MASTER]))
        .filter_map(|addr| addr.get(1)?.parse().ok())
        .collect();
    named.iter().copied().find(|port| named.iter().filter(|other| *other == port).count() >= 2)
}

fn sentinel_query<T: redis::FromRedisValue>(port: u16, args: &[&str]) -> Option<T> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).ok()?;
    let mut con = client.get_connection_with_timeout(Duration::from_millis(200)).ok()?;
    con.set_read_timeout(Some(Duration::from_millis(500))).ok()?;
    redis::cmd(args[0]).arg(&args[1..]).query(&mut con).ok()
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
