//! Real server processes for tests (`redis-server`, or [`server_bin`]): OS-assigned ports, bounded
//! readiness, the server log on failure, killed on drop (also on panic).

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const READY_TIMEOUT: Duration = Duration::from_secs(20);
/// A server run under a tool (valgrind) starts slower.
const WRAPPED_READY_TIMEOUT: Duration = Duration::from_secs(60);
const PORT_ATTEMPTS: usize = 5;
/// How a start that found another server on its port fails.
const ANOTHER_SERVER: &str = "another server answers on port";

/// The rlock module built in debug mode, building it on first use so that
/// a plain `cargo test` never runs against a stale `.so`. `RLOCK_MODULE`
/// names another build (the benchmarks use the release one).
pub fn module_path() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        if let Ok(path) = std::env::var("RLOCK_MODULE") {
            return PathBuf::from(path);
        }
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let status = Command::new(env!("CARGO"))
            .args(["build", "--quiet", "-p", "rlock", "--lib"])
            .current_dir(&root)
            .status()
            .expect("run cargo to build the module");
        assert!(status.success(), "building the rlock module failed");
        let target = std::env::var("CARGO_TARGET_DIR").map_or_else(|_| root.join("target"), PathBuf::from);
        target.join("debug").join(format!("librlock.{}", std::env::consts::DLL_EXTENSION))
    })
}

/// The server binary tests run: `RLOCK_SERVER_BIN`, else `redis-server`
/// (`make test-valkey` points it at `valkey-server`).
pub fn server_bin() -> String {
    std::env::var("RLOCK_SERVER_BIN").unwrap_or_else(|_| "redis-server".into())
}

/// The matching cli: `RLOCK_CLI_BIN`, else `redis-cli`.
pub fn cli_bin() -> String {
    std::env::var("RLOCK_CLI_BIN").unwrap_or_else(|_| "redis-cli".into())
}

/// How to start a server.
#[derive(Clone, Debug)]
pub struct ServerBuilder {
    module: bool,
    module_args: Vec<String>,
    config: Vec<(String, String)>,
    /// A configuration file's text, read before the options above.
    conf: Option<String>,
    /// A program, and its arguments, that runs the server (valgrind).
    wrapper: Vec<String>,
    /// The server binary when not [`server_bin`].
    binary: Option<String>,
    /// A cluster node: a bus port is chosen with the server's, at each
    /// attempt at a port.
    cluster_bus: bool,
}

impl ServerBuilder {
    /// Runs the server under `program` with `args` before the server's
    /// own command line (`valgrind --tool=callgrind`, say).
    pub fn wrapped_in(mut self, program: &str, args: &[String]) -> Self {
        self.wrapper = std::iter::once(program.to_owned()).chain(args.iter().cloned()).collect();
        self
    }

    /// Runs `program` instead of [`server_bin`] (Debian's `redis-server`
    /// writing the files another server then loads).
    pub fn binary(mut self, program: &str) -> Self {
        self.binary = Some(program.to_owned());
        self
    }

    /// A plain redis-server, as a replica or an old node would be.
    pub fn without_module(mut self) -> Self {
        self.module = false;
        self
    }

    /// An argument after the module path on the `loadmodule` line.
    pub fn module_arg(mut self, arg: &str) -> Self {
        self.module_args.push(arg.to_owned());
        self
    }

    /// A cluster node. Its bus port is chosen explicitly: the default, the
    /// port plus 10000, may not exist for an OS-assigned port.
    pub fn cluster(mut self) -> Self {
        self.cluster_bus = true;
        self.config("cluster-enabled", "yes")
            .config("cluster-config-file", "nodes.conf")
            .config("cluster-node-timeout", "2000")
    }

    /// A `--name value` server option.
    pub fn config(mut self, name: &str, value: &str) -> Self {
        self.config.push((name.to_owned(), value.to_owned()));
        self
    }

    /// A configuration file the server reads first, as `redis-server
    /// redis.conf` would (written into the server's own directory); the
    /// builder's options, port and directory come after it, and win.
    pub fn conf(mut self, text: &str) -> Self {
        self.conf = Some(text.to_owned());
        self
    }

    pub fn start(self) -> Server {
        let mut server = self.unstarted();
        server.spawn_on_free_port();
        server
    }

    /// Starts a server that must refuse to start (because of a bad module
    /// argument, say) and returns its log.
    pub fn start_expecting_failure(self) -> String {
        let mut server = self.unstarted();
        let mut tried = vec![];
        for _ in 0..PORT_ATTEMPTS {
            server.take_ports(free_ports);
            match server.spawn() {
                Ok(()) => panic!("redis-server started, but should have refused to:\n{}", server.log()),
                Err(log) if log.contains("Address already in use") => tried.push(server.ports_and(&log)),
                Err(log) => return log,
            }
        }
        panic!("no free port after {PORT_ATTEMPTS} attempts: {}", tried.join("\n"));
    }

    /// Whether a server this builder starts may be lent to another test
    /// ([`crate::SharedServer`]): not a cluster node, not under a tool.
    pub(crate) fn reusable(&self) -> bool {
        self.wrapper.is_empty() && !self.config.iter().any(|(name, _)| name == "cluster-enabled")
    }

    fn unstarted(self) -> Server {
        let dir = tempfile::Builder::new().prefix("rlock-redis-").tempdir().expect("temp dir");
        Server { builder: self, dir, port: 0, bus_port: None, child: None }
    }
}

/// A running redis-server with its own directory (AOF, RDB and log).
pub struct Server {
    builder: ServerBuilder,
    dir: tempfile::TempDir,
    port: u16,
    /// A cluster node's bus port (`cluster-port`).
    bus_port: Option<u16>,
    child: Option<Child>,
}

impl Server {
    /// A server with the module loaded.
    pub fn start() -> Self {
        Self::builder().start()
    }

    pub fn builder() -> ServerBuilder {
        ServerBuilder {
            module: true,
            module_args: vec![],
            config: vec![],
            conf: None,
            wrapper: vec![],
            binary: None,
            cluster_bus: false,
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    pub fn client(&self) -> redis::Client {
        redis::Client::open(self.url()).expect("client")
    }

    pub fn connection(&self) -> redis::Connection {
        self.client().get_connection().unwrap_or_else(|e| panic!("connect: {e}\n{}", self.log()))
    }

    /// A cluster of this one node, serving every slot, once it says so.
    pub fn single_node_cluster() -> (Server, redis::Connection) {
        let server = Server::builder().cluster().start();
        let mut con = server.connection();
        let _: () = redis::cmd("CLUSTER").arg(&["ADDSLOTSRANGE", "0", "16383"]).query(&mut con).unwrap();
        crate::eventually("cluster_state:ok", std::time::Duration::from_secs(20), || {
            let info: String = redis::cmd("CLUSTER").arg("INFO").query(&mut con).unwrap();
            info.contains("cluster_state:ok")
        });
        (server, con)
    }

    /// A connection as `user` (password `pw`), created or reset with every
    /// command and only the key and channel `rules` given (`~locks:*`, `&*`).
    pub fn login(&self, user: &str, rules: &[&str]) -> redis::Connection {
        let mut admin = self.connection();
        let _: () = redis::cmd("ACL")
            .arg(&["SETUSER", user, "on", ">pw", "+@all", "resetkeys", "resetchannels"])
            .arg(rules)
            .query(&mut admin)
            .unwrap();
        let mut con = self.connection();
        let _: () = redis::cmd("AUTH").arg(&[user, "pw"]).query(&mut con).unwrap();
        con
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// The process id, for signals (SIGSTOP, SIGKILL) in fault tests.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Makes this server a replica of `primary` and waits for the link.
    pub fn replicate(&self, primary: &Server) {
        let mut con = self.connection();
        let _: () = redis::cmd("REPLICAOF").arg("127.0.0.1").arg(primary.port()).query(&mut con).expect("REPLICAOF");
        crate::eventually("the replication link", READY_TIMEOUT, || {
            let info: String = redis::cmd("INFO").arg("replication").query(&mut con).unwrap_or_default();
            info.contains("master_link_status:up")
        });
    }

    /// SIGSTOP: the server hangs, as under a long pause, until [`Server::resume`].
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// SIGCONT after [`Server::pause`].
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        send_signal(self.pid().expect("a running server"), signal);
    }

    /// SIGKILL, as a crash would: no shutdown, no final save.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the server and starts it again on the same port and directory,
    /// so that it reloads its AOF or RDB.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn().unwrap_or_else(|log| panic!("restart failed:\n{log}"));
    }

    /// Like [`Server::restart`], but the server comes back without the
    /// module: what an operator who removed it would see.
    pub fn restart_without_module(&mut self) {
        self.builder.module = false;
        self.restart();
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("redis.log")
    }

    fn spawn_on_free_port(&mut self) {
        self.spawn_on(free_ports);
    }

    /// Starts on ports from `choose` (given how many: the server's, then a
    /// cluster node's bus port), all chosen again for each attempt that
    /// found one taken. A port the OS reported free may be taken before the
    /// server binds it (by another test's server, given the same port by
    /// its own `free_ports`): the bus port as well as the server's, so a
    /// retry that kept the bus port failed the same way each time.
    fn spawn_on(&mut self, mut choose: impl FnMut(usize) -> Vec<u16>) {
        let mut tried = vec![];
        for _ in 0..PORT_ATTEMPTS {
            self.take_ports(&mut choose);
            match self.spawn() {
                Ok(()) => return,
                Err(log) if log.contains("Address already in use") || log.starts_with(ANOTHER_SERVER) => {
                    tried.push(self.ports_and(&log));
                }
                Err(log) => panic!("redis-server did not start:\n{log}"),
            }
        }
        panic!("no free port after {PORT_ATTEMPTS} attempts: {}", tried.join("\n"));
    }

    fn take_ports(&mut self, mut choose: impl FnMut(usize) -> Vec<u16>) {
        let ports = choose(1 + usize::from(self.builder.cluster_bus));
        self.port = ports[0];
        self.bus_port = ports.get(1).copied();
    }

    /// The ports of a failed attempt and the line of `log` that says why
    /// (the last: the log file goes on across attempts).
    fn ports_and(&self, log: &str) -> String {
        let why = log.lines().rfind(|line| line.contains("in use") || line.starts_with(ANOTHER_SERVER));
        format!("port {}, bus port {:?}: {}", self.port, self.bus_port, why.unwrap_or("?"))
    }

    /// Starts the process and waits until it answers PING; on failure the
    /// error is the server log.
    fn spawn(&mut self) -> Result<(), String> {
        let server = self.builder.binary.clone().unwrap_or_else(server_bin);
        let mut command = match self.builder.wrapper.split_first() {
            Some((program, args)) => {
                let mut command = Command::new(program);
                command.args(args).arg(server);
                command
            }
            None => Command::new(server),
        };
        if let Some(text) = &self.builder.conf {
            let path = self.dir.path().join("redis.conf");
            std::fs::write(&path, text).map_err(|e| format!("write {}: {e}", path.display()))?;
            command.arg(path);
        }
        command
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1"])
            .arg("--dir")
            .arg(self.dir.path())
            .arg("--logfile")
            .arg(self.log_path())
            .args(["--save", "", "--daemonize", "no"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if self.builder.module {
            command.arg("--loadmodule").arg(module_path()).args(&self.builder.module_args);
        }
        for (name, value) in &self.builder.config {
            command.arg(format!("--{name}")).arg(value);
        }
        if let Some(bus) = self.bus_port {
            command.arg("--cluster-port").arg(bus.to_string());
        }
        let program = command.get_program().to_string_lossy().into_owned();
        self.child = Some(command.spawn().map_err(|e| format!("spawn {program}: {e}"))?);
        self.wait_ready()
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let within = if self.builder.wrapper.is_empty() { READY_TIMEOUT } else { WRAPPED_READY_TIMEOUT };
        let deadline = Instant::now() + within;
        let client = self.client();
        // The `INFO server` line naming this server's process.
        let own_process = self.child.as_ref().map(|child| format!("process_id:{}", child.id()));
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    self.child = None;
                    return Err(format!("redis-server exited with {status}\n{}", self.log()));
                }
            }
            let ready = client
                .get_connection_with_timeout(Duration::from_millis(200))
                // PING fails while the server loads its AOF or RDB; INFO
                // then names the process that answered.
                .and_then(|mut con| {
                    redis::cmd("PING").query::<String>(&mut con)?;
                    redis::cmd("INFO").arg("server").query::<String>(&mut con)
                });
            match ready {
                // Another server took the port (a test elsewhere, between a
                // kill and the restart on it) while this one fails to bind.
                Ok(info) if !info.lines().any(|line| Some(line) == own_process.as_deref()) => {
                    self.kill();
                    return Err(format!("{ANOTHER_SERVER} {}:\n{}", self.port, self.log()));
                }
                Ok(_) => return Ok(()),
                // Still loading its AOF or RDB: keep polling.
                Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
                Err(e) => {
                    self.kill();
                    return Err(format!("not ready after {within:?}: {e}\n{}", self.log()));
                }
            }
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("--- redis-server log (port {}) ---\n{}", self.port, self.log());
        }
        self.kill();
    }
}

/// Sends `signal` (as `kill` spells it: `-STOP`, `-CONT`, `-KILL`) to a process.
pub fn send_signal(pid: u32, signal: &str) {
    let status = Command::new("kill").args([signal, &pid.to_string()]).status().expect("run kill");
    assert!(status.success(), "kill {signal} {pid}");
}

pub(crate) fn free_port() -> u16 {
    free_ports(1)[0]
}

/// `count` ports the OS reported free, distinct: each is held until all
/// are chosen (a port let go may be handed out again at once).
pub(crate) fn free_ports(count: usize) -> Vec<u16> {
    let listeners: Vec<TcpListener> =
        (0..count).map(|_| TcpListener::bind("127.0.0.1:0").expect("an OS-assigned port")).collect();
    listeners.iter().map(|listener| listener.local_addr().expect("a bound listener").port()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server whose port another server took (between a kill and the
    /// restart on that port) is not taken for started.
    #[test]
    fn another_server_on_the_port_is_not_taken_for_this_one() {
        let first = Server::builder().without_module().start();
        let mut second = Server::builder().without_module().unstarted();
        second.port = first.port();
        let failed = second.spawn().expect_err("the second server cannot have started");
        assert!(failed.starts_with(ANOTHER_SERVER) || failed.contains("Address already in use"), "{failed}");
        let mut con = first.connection();
        assert_eq!(redis::cmd("PING").query::<String>(&mut con).unwrap(), "PONG");
    }

    /// Ports for a cluster node whose bus port is taken (held here) at
    /// the first `taken_for` attempts.
    fn bus_port_taken(taken: &TcpListener, mut taken_for: usize) -> impl FnMut(usize) -> Vec<u16> + '_ {
        move |count| {
            let mut ports = free_ports(count);
            if taken_for > 0 {
                taken_for -= 1;
                ports[1] = taken.local_addr().unwrap().port();
            }
            ports
        }
    }

    /// A cluster node whose bus port was taken between choosing and binding
    /// it starts on ports chosen again, the bus port with them (kept, the
    /// bus port failed every attempt: "no free port after 5 attempts").
    #[test]
    fn a_cluster_node_whose_bus_port_is_taken_starts_on_other_ports() {
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut node = Server::builder().without_module().cluster().unstarted();
        node.spawn_on(bus_port_taken(&taken, 1));
        let id: String = redis::cmd("CLUSTER").arg("MYID").query(&mut node.connection()).unwrap();
        assert!(!id.is_empty(), "a cluster node");
        assert_ne!(node.bus_port, Some(taken.local_addr().unwrap().port()));
        node.restart();
        assert_eq!(redis::cmd("PING").query::<String>(&mut node.connection()).unwrap(), "PONG");
    }

    /// A bus port taken at every attempt fails naming it and why.
    #[test]
    #[should_panic(expected = "no free port after 5 attempts")]
    fn a_bus_port_taken_at_every_attempt_fails_saying_so() {
        let taken = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut node = Server::builder().without_module().cluster().unstarted();
        node.spawn_on(bus_port_taken(&taken, PORT_ATTEMPTS));
    }
}
