//! Real Redisson (Java) as the clients: one JVM (faults/java's
//! `RedissonWorkload`) with [`CLIENTS`] threads on a Redisson client in
//! Sentinel mode, each taking a name with `lockInterruptibly()` (the
//! watchdog renews every third of its [`LEASE`]), holding it up to
//! [`LONGEST_HOLD_MS`] and unlocking. The JVM reports each critical section
//! on stdout in `System.nanoTime()` (CLOCK_MONOTONIC, as `Instant`), from
//! after `lock()` returned until before `unlock()` was sent: what a
//! Redisson user's code held, whatever the watchdog did meanwhile. A holder
//! learns it lost its lock only when `unlock()` throws.
//!
//! Maven runs once a process, to compile the class and resolve Redisson's
//! classpath; every run then starts `java -cp`, waits for its `ready`
//! before the run's clock starts, and ends it at the run's end. The JVM
//! runs in the suite's directory, so an interrupt's cleanup kills it with
//! the servers; dropping a [`Jvm`] (a panic) kills it too, and a JVM whose
//! suite is gone reads the end of its stdin and exits.

use crate::run::info_field;
use crate::workload::{Section, Shared, CLIENTS, LEASE, LONGEST_HOLD_MS, NAMES};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};
use testkit::MASTER;

/// The Redisson the JVM runs: the newest one the Java suite tests.
pub const REDISSON_VERSION: &str = testkit::redisson_lock::VERSION;

/// How long the JVM may take to end its holds and exit after `stop`.
const EXIT_WITHIN: Duration = Duration::from_secs(20);

/// Compiles faults/java and resolves its classpath with [`REDISSON_VERSION`]
/// (once a process).
pub fn classpath() -> &'static str {
    static CLASSPATH: OnceLock<String> = OnceLock::new();
    CLASSPATH.get_or_init(|| {
        let project = Path::new(env!("CARGO_MANIFEST_DIR")).join("java");
        let target = project.join("target");
        let built = Command::new("mvn")
            .args(["-B", "-q", "-ntp", "compile", "dependency:build-classpath"])
            .arg(format!("-Dredisson.version={REDISSON_VERSION}"))
            .arg(format!("-Dmdep.outputFile={}", target.join("classpath").display()))
            .current_dir(&project)
            .output()
            .expect("run mvn (make java-deps installs Maven and a JDK)");
        let said = String::from_utf8_lossy(&built.stdout) + String::from_utf8_lossy(&built.stderr);
        assert!(built.status.success(), "building faults/java failed:\n{said}");
        let jars = std::fs::read_to_string(target.join("classpath")).expect("faults/java/target/classpath");
        format!("{}:{}", target.join("classes").display(), jars.trim())
    })
}

/// CLOCK_MONOTONIC, read now, and the `Instant` it was read at: Rust's
/// `Instant` is that clock on Linux, so a JVM's `System.nanoTime()`
/// converts by their offset.
#[derive(Debug, Clone, Copy)]
struct Clock {
    at: Instant,
    ns: i128,
}

impl Clock {
    fn now() -> Clock {
        let mut time = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        let at = Instant::now();
        // SAFETY: `time` is a valid timespec for the call to fill.
        let read = unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut time) };
        assert_eq!(read, 0, "clock_gettime(CLOCK_MONOTONIC)");
        Clock { at, ns: i128::from(time.tv_sec) * 1_000_000_000 + i128::from(time.tv_nsec) }
    }

    fn instant(&self, nano_time: i64) -> Instant {
        let offset = i128::from(nano_time) - self.ns;
        let by = Duration::from_nanos(offset.unsigned_abs() as u64);
        if offset >= 0 {
            self.at + by
        } else {
            self.at - by
        }
    }
}

/// How the JVM's holds ended.
#[derive(Debug, Default)]
struct Tally {
    released: usize,
    /// `unlock()` threw IllegalMonitorStateException.
    lost: usize,
    /// `unlock()` threw otherwise.
    failed: usize,
}

/// The running JVM.
pub struct Jvm {
    child: Mutex<Child>,
    stdin: Mutex<ChildStdin>,
    reader: Mutex<Option<JoinHandle<Tally>>>,
    dir: PathBuf,
}

impl Jvm {
    /// Starts the JVM on the Sentinels at `sentinel_ports` and waits for
    /// its `ready`; its sections go to `shared` from then on.
    pub fn start(sentinel_ports: &[u16], seed: u64, shared: &Arc<Shared>) -> Jvm {
        let classpath = classpath();
        let dir = std::env::temp_dir().join(format!("rlock-java-{}-{seed}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        let log = std::fs::File::create(dir.join("jvm.log")).expect("the JVM's log");
        let ports: Vec<String> = sentinel_ports.iter().map(u16::to_string).collect();
        let mut child = Command::new("java")
            .args(["-XX:+UseSerialGC", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-cp", classpath])
            .arg("rlock.faults.RedissonWorkload")
            .args([MASTER, &ports.join(",")])
            .args([CLIENTS, NAMES].map(|n| n.to_string()))
            .args([LEASE.as_millis() as u64, LONGEST_HOLD_MS, seed].map(|n| n.to_string()))
            .current_dir(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("start java");
        let stdin = child.stdin.take().expect("the JVM's stdin");
        let mut lines = BufReader::new(child.stdout.take().expect("the JVM's stdout")).lines();
        let jvm = Jvm { child: Mutex::new(child), stdin: Mutex::new(stdin), reader: Mutex::new(None), dir };
        if !matches!(lines.next(), Some(Ok(line)) if line == "ready") {
            panic!("the JVM did not start; its log:\n{}", jvm.log());
        }
        let (shared, clock) = (shared.clone(), Clock::now());
        *jvm.reader.lock().unwrap() = Some(thread::spawn(move || read_sections(lines, &shared, clock)));
        jvm
    }

    /// Lets the threads lock until `shared.stop`, then ends the JVM; its
    /// sections are in `shared` when this returns.
    pub fn run(&self, shared: &Shared) {
        self.send("go");
        while !shared.stop.load(std::sync::atomic::Ordering::Relaxed) {
            thread::sleep(Duration::from_millis(10));
        }
        self.send("stop");
        let deadline = Instant::now() + EXIT_WITHIN;
        let mut child = self.child.lock().unwrap();
        while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(50));
        }
        if child.try_wait().ok().flatten().is_none() {
            eprintln!("Redisson: the JVM did not exit within {EXIT_WITHIN:?} of stop; killed");
            let _ = child.kill();
        }
        let reader = self.reader.lock().unwrap().take();
        let tally = reader.map(|reader| reader.join().expect("the JVM's reader panicked"));
        let primary = shared.primary.load(std::sync::atomic::Ordering::Relaxed);
        eprintln!("Redisson: unlocks {tally:?}; the last primary's {}", module_counts(primary));
    }

    /// SIGSTOP of the whole JVM (a GC pause, a stopped process: its
    /// watchdog stops too) for `lasts`, then SIGCONT.
    pub fn pause(&self, lasts: Duration) {
        let pid = self.child.lock().unwrap().id();
        testkit::send_signal(pid, "-STOP");
        thread::sleep(lasts);
        testkit::send_signal(pid, "-CONT");
    }

    fn send(&self, line: &str) {
        let _ = writeln!(self.stdin.lock().unwrap(), "{line}");
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("jvm.log")).unwrap_or_default()
    }
}

impl Drop for Jvm {
    fn drop(&mut self) {
        let child = self.child.get_mut().unwrap_or_else(|e| e.into_inner());
        let _ = child.kill();
        let _ = child.wait();
        if std::env::var_os("RLOCK_FAULTS_LOGS").is_some() {
            eprintln!("Redisson's log:\n{}", self.log());
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// What the module at `port` counted: Redisson's lock scripts it ran
/// natively (none as Lua), acquires its lock-delay refused.
fn module_counts(port: u16) -> String {
    let fields = ["rlock_redisson_native_lock", "rlock_lock_delay_refusals"];
    let con = redis::Client::open(format!("redis://127.0.0.1:{port}"))
        .and_then(|client| client.get_connection_with_timeout(Duration::from_millis(500)));
    let Ok(mut con) = con else { return format!("INFO: no connection to {port}") };
    let counts = fields.map(|field| format!("{field}: {:?}", info_field(&mut con, field)));
    counts.join(", ")
}

/// Records each `section THREAD NAME START END HOW` line until the JVM's
/// stdout ends.
fn read_sections(lines: impl Iterator<Item = std::io::Result<String>>, shared: &Shared, clock: Clock) -> Tally {
    let mut tally = Tally::default();
    for line in lines.map_while(Result::ok) {
        let words: Vec<&str> = line.split_whitespace().collect();
        let ["section", client, name, start, end, how] = words[..] else { continue };
        let number = |word: &str| word.parse::<i64>().unwrap_or_else(|_| panic!("the JVM said {line:?}"));
        let (start, end) = (clock.instant(number(start)), clock.instant(number(end)));
        let (client, name) = (number(client) as usize, number(name) as usize);
        shared.record_section(Section { name, client, start, end });
        match how {
            "released" => tally.released += 1,
            "lost" => tally.lost += 1,
            _ => tally.failed += 1,
        }
    }
    tally
}
