//! A real Redis Cluster on loopback: every node a [`Server`] with the
//! module, joined by `redis-cli --cluster create`.

use crate::{eventually, server_bin, Server, ServerBuilder, PATIENCE};
use std::process::Command;
use std::time::Duration;

const JOIN_TIMEOUT: Duration = Duration::from_secs(60);

pub struct Cluster {
    pub nodes: Vec<Server>,
}

impl Cluster {
    /// `primaries` primaries with `replicas` replicas each.
    pub fn start(primaries: usize, replicas: usize) -> Self {
        Self::start_with(primaries, replicas, |node| node)
    }

    /// As [`Cluster::start`], each node's settings passed through `configure`.
    pub fn start_with(primaries: usize, replicas: usize, configure: impl Fn(ServerBuilder) -> ServerBuilder) -> Self {
        let nodes: Vec<Server> =
            (0..primaries * (1 + replicas)).map(|_| configure(Server::builder().cluster()).start()).collect();
        let addresses: Vec<String> = nodes.iter().map(|n| format!("127.0.0.1:{}", n.port())).collect();
        let created = run_bounded(
            Command::new(crate::server::cli_bin()).args(["--cluster", "create"]).args(&addresses).args([
                "--cluster-replicas",
                &replicas.to_string(),
                "--cluster-yes",
            ]),
            JOIN_TIMEOUT,
        );
        if let Err(output) = created {
            // redis-cli waits for the nodes to agree without a bound.
            let views: Vec<String> = nodes
                .iter()
                .map(|node| {
                    let view: String =
                        redis::cmd("CLUSTER").arg("NODES").query(&mut node.connection()).unwrap_or_default();
                    format!("node {}:\n{view}", node.port())
                })
                .collect();
            panic!("redis-cli --cluster create failed:\n{output}\n{}", views.join("\n"));
        }
        let cluster = Self { nodes };
        cluster.wait_until_healthy(primaries * (1 + replicas));
        cluster
    }

    /// Every node agrees the cluster is ok, knows every other node over a
    /// connected bus link (a PUBLISH reaches only the nodes a link is up
    /// to: a test started before saw a release's message lost), and every
    /// replica is in sync.
    pub fn wait_until_healthy(&self, nodes: usize) {
        for node in &self.nodes {
            let mut con = node.connection();
            eventually("a healthy cluster", JOIN_TIMEOUT, || {
                let info: String = redis::cmd("CLUSTER").arg("INFO").query(&mut con).unwrap_or_default();
                let links: String = redis::cmd("CLUSTER").arg("NODES").query(&mut con).unwrap_or_default();
                let replication: String = redis::cmd("INFO").arg("replication").query(&mut con).unwrap_or_default();
                info.contains("cluster_state:ok")
                    && info.contains(&format!("cluster_known_nodes:{nodes}\r\n"))
                    && links.lines().filter(|line| line.split_whitespace().nth(7) == Some("connected")).count() == nodes
                    && (replication.contains("role:master") || replication.contains("master_link_status:up"))
            });
        }
    }

    /// Seed URLs for a cluster client.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(Server::url).collect()
    }

    /// The node that serves `key` now (the primary of its slot).
    pub fn primary_for(&self, key: &[u8]) -> &Server {
        let mut con = self.nodes[0].connection();
        let slot: i64 = redis::cmd("CLUSTER").arg("KEYSLOT").arg(key).query(&mut con).expect("KEYSLOT");
        self.node(self.slot_owner(slot).expect("the slot's owner in CLUSTER SLOTS"))
    }

    /// A replica of the primary serving `key`.
    pub fn replica_for(&self, key: &[u8]) -> &Server {
        let primary = self.primary_for(key).port().to_string();
        self.nodes
            .iter()
            .find(|node| {
                let info: String =
                    redis::cmd("INFO").arg("replication").query(&mut node.connection()).unwrap_or_default();
                info.contains(&format!("master_port:{primary}\r\n"))
            })
            .expect("a replica of the key's primary")
    }

    /// The node listening on `port`.
    pub fn node(&self, port: u16) -> &Server {
        self.nodes.iter().find(|node| node.port() == port).expect("a node of the cluster")
    }

    /// Starts moving `slot` from its owner to another primary, as
    /// `redis-cli --cluster reshard` moves one: `IMPORTING` on the target,
    /// then `MIGRATING` on the owner.
    pub fn begin_move(&self, slot: i64) -> SlotMove {
        let source_port = self.slot_owner(slot).expect("an owner of the slot");
        let mut source = self.node(source_port).connection();
        let target_port = other_primary(&mut source);
        let mut target = self.node(target_port).connection();
        let (source_id, target_id) = (node_id(&mut source), node_id(&mut target));
        set_slot(&mut target, slot, "IMPORTING", &source_id);
        set_slot(&mut source, slot, "MIGRATING", &target_id);
        SlotMove { slot, source, target, source_port, target_port, target_id }
    }

    /// Moves `slot` from its owner to another primary with Valkey 9's
    /// atomic slot migration (`CLUSTER MIGRATESLOTS`): the target copies the
    /// slot's keys while the owner still serves it, then takes it at once.
    /// Returns the target's port once the owner lists the migration a success.
    pub fn migrate_slot_atomically(&self, slot: i64) -> u16 {
        let source = self.node(self.slot_owner(slot).expect("an owner of the slot"));
        let mut con = source.connection();
        let target_port = other_primary(&mut con);
        let target_id = node_id(&mut self.node(target_port).connection());
        redis::cmd("CLUSTER")
            .arg("MIGRATESLOTS")
            .arg("SLOTSRANGE")
            .arg(slot)
            .arg(slot)
            .arg("NODE")
            .arg(&target_id)
            .query::<()>(&mut con)
            .unwrap_or_else(|err| panic!("{} refused CLUSTER MIGRATESLOTS with rlock loaded: {err}", server_bin()));
        eventually("the slot migration's end", PATIENCE, || match export_state(&mut con, slot) {
            Some((state, _)) if state == "success" => true,
            Some((state, message)) if state == "failed" || state == "cancelled" => {
                panic!("the migration of slot {slot} {state}: {message}\n{}", source.log())
            }
            _ => false,
        });
        target_port
    }

    /// The port of the primary that owns `slot`, as the first node that
    /// answers sees it (see [`slot_owner_among`]).
    pub fn slot_owner(&self, slot: i64) -> Option<u16> {
        slot_owner_among(&self.nodes.iter().map(Server::port).collect::<Vec<_>>(), slot)
    }
}

/// The port of the primary that owns `slot`, as the first of the nodes at
/// `ports` that answers sees it (a killed or stopped node does not), from
/// CLUSTER SLOTS: each entry is `[start, end, [host, port, id, ...], replicas...]`.
pub fn slot_owner_among(ports: &[u16], slot: i64) -> Option<u16> {
    const ANSWER_WITHIN: Duration = Duration::from_millis(200);
    ports
        .iter()
        .find_map(|port| {
            let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).ok()?;
            let mut con = client.get_connection_with_timeout(ANSWER_WITHIN).ok()?;
            con.set_read_timeout(Some(ANSWER_WITHIN)).ok()?;
            let ranges: Vec<Vec<redis::Value>> = redis::cmd("CLUSTER").arg("SLOTS").query(&mut con).ok()?;
            ranges.iter().find_map(|range| {
                let int = |v: &redis::Value| redis::from_redis_value::<i64>(v.clone()).ok();
                let (start, end) = (int(range.first()?)?, int(range.get(1)?)?);
                let primary: Vec<redis::Value> = redis::from_redis_value(range.get(2)?.clone()).ok()?;
                (start <= slot && slot <= end).then(|| int(primary.get(1)?)).flatten()
            })
        })
        .and_then(|port| u16::try_from(port).ok())
}

/// Whether the server has `CLUSTER MIGRATESLOTS` (Valkey 9.0+): `COMMAND
/// INFO` names the subcommands it knows.
pub fn has_atomic_slot_migration(con: &mut redis::Connection) -> bool {
    let info: Vec<redis::Value> =
        redis::cmd("COMMAND").arg("INFO").arg("CLUSTER|MIGRATESLOTS").query(con).expect("COMMAND INFO");
    info.first().is_some_and(|entry| *entry != redis::Value::Nil)
}

/// The state and message of the newest export of `slot` alone that
/// `CLUSTER GETSLOTMIGRATIONS` lists on `con` (newest first; each entry is
/// `name value …`).
fn export_state(con: &mut redis::Connection, slot: i64) -> Option<(String, String)> {
    let migrations: Vec<Vec<redis::Value>> =
        redis::cmd("CLUSTER").arg("GETSLOTMIGRATIONS").query(con).expect("CLUSTER GETSLOTMIGRATIONS");
    let range = format!("{slot}-{slot}");
    migrations.into_iter().find_map(|entry| {
        let texts: Vec<String> =
            entry.into_iter().map(|item| redis::from_redis_value(item).unwrap_or_default()).collect();
        let field = |name: &str| {
            texts.chunks(2).find(|pair| pair[0] == name).and_then(|pair| pair.get(1)).cloned().unwrap_or_default()
        };
        (field("operation") == "EXPORT" && field("slot_ranges") == range).then(|| (field("state"), field("message")))
    })
}

/// A slot half moved by [`Cluster::begin_move`]: its keys move with
/// [`SlotMove::move_keys`], and [`SlotMove::finish`] gives it to the target.
pub struct SlotMove {
    pub slot: i64,
    /// Connections to the slot's owner and to the primary it moves to.
    pub source: redis::Connection,
    pub target: redis::Connection,
    pub source_port: u16,
    pub target_port: u16,
    target_id: String,
}

impl SlotMove {
    /// `MIGRATE`s the slot's keys to the target, until the source has none.
    pub fn move_keys(&mut self) {
        loop {
            let keys: Vec<String> = redis::cmd("CLUSTER")
                .arg("GETKEYSINSLOT")
                .arg(self.slot)
                .arg(100)
                .query(&mut self.source)
                .expect("CLUSTER GETKEYSINSLOT");
            if keys.is_empty() {
                return;
            }
            self.migrate(&keys);
        }
    }

    /// `MIGRATE`s `keys` to the target in one batch, as a resharding tool
    /// moves a slot's keys (the rest stay on the source).
    pub fn migrate<K: redis::ToRedisArgs>(&mut self, keys: &[K]) {
        const MIGRATE_TIMEOUT_MS: u64 = 2_000;
        redis::cmd("MIGRATE")
            .arg("127.0.0.1")
            .arg(self.target_port)
            .arg("")
            .arg(0)
            .arg(MIGRATE_TIMEOUT_MS)
            .arg("KEYS")
            .arg(keys)
            .query::<()>(&mut self.source)
            .expect("MIGRATE");
    }

    /// Gives the slot to the target, and tells every node that answers
    /// (the others would learn it by gossip; told, they redirect at once).
    pub fn finish(mut self, cluster: &Cluster) {
        set_slot(&mut self.target, self.slot, "NODE", &self.target_id);
        set_slot(&mut self.source, self.slot, "NODE", &self.target_id);
        for node in &cluster.nodes {
            let Ok(mut con) = node.client().get_connection() else { continue };
            let _ = redis::cmd("CLUSTER")
                .arg("SETSLOT")
                .arg(self.slot)
                .arg("NODE")
                .arg(&self.target_id)
                .query::<()>(&mut con);
        }
    }
}

fn set_slot(con: &mut redis::Connection, slot: i64, state: &str, id: &str) {
    redis::cmd("CLUSTER").arg("SETSLOT").arg(slot).arg(state).arg(id).query::<()>(con).expect("CLUSTER SETSLOT")
}

fn node_id(con: &mut redis::Connection) -> String {
    redis::cmd("CLUSTER").arg("MYID").query(con).expect("CLUSTER MYID")
}

/// The port of another healthy primary, as `source` sees the cluster.
fn other_primary(source: &mut redis::Connection) -> u16 {
    let nodes: String = redis::cmd("CLUSTER").arg("NODES").query(source).expect("CLUSTER NODES");
    // Each line: id host:port@bus flags primary-id ...
    nodes
        .lines()
        .filter_map(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let flags = words.get(2)?;
            let primary = flags.contains("master") && !flags.contains("myself") && !flags.contains("fail");
            let address = words.get(1)?.split('@').next()?;
            primary.then(|| address.rsplit(':').next()?.parse::<u16>().ok()).flatten()
        })
        .next()
        .expect("another primary")
}

/// Runs `command` to its end within `limit`: its output, as an error when
/// it failed or was killed at the limit.
fn run_bounded(command: &mut Command, limit: Duration) -> Result<(), String> {
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run {:?}: {e}", command.get_program()));
    let deadline = std::time::Instant::now() + limit;
    let status = loop {
        match child.try_wait().expect("wait for the child") {
            Some(status) => break Some(status),
            None if std::time::Instant::now() > deadline => break None,
            None => std::thread::sleep(crate::POLL), // polling the child's exit
        }
    };
    if status.is_none() {
        let _ = child.kill();
    }
    let output = child.wait_with_output().expect("the child's output");
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    match status {
        Some(status) if status.success() => Ok(()),
        Some(status) => Err(format!("{status}\n{text}")),
        None => Err(format!("still running after {limit:?}\n{text}")),
    }
}
