//! A server run under callgrind, its instructions counted around one piece
//! of work at a time: counts, unlike times, do not move with what else
//! the two shared cores run.

use std::path::Path;
use std::process::{Command, Stdio};
use testkit::Server;

/// A server run under callgrind, its counts taken around one piece of
/// work at a time.
pub struct Counted {
    pub server: Server,
    pid: u32,
    dumps: tempfile::TempDir,
    /// Dumps taken so far: callgrind numbers its parts from 1.
    taken: usize,
}

impl Counted {
    /// With the module and the filter `mode` (`None`: no module).
    pub fn start(mode: Option<&str>) -> Result<Self, String> {
        valgrind_installed()?;
        let dumps = tempfile::Builder::new().prefix("rlock-callgrind-").tempdir().map_err(|e| e.to_string())?;
        let out_file = format!("--callgrind-out-file={}", dumps.path().join("cg.%p.out").display());
        let builder = Server::builder().wrapped_in("valgrind", &["--tool=callgrind".to_owned(), out_file]);
        let server = match mode {
            Some(mode) => builder.module_arg("redisson-scripts").module_arg(mode),
            None => builder.without_module(),
        }
        .start();
        let pid = server.pid().ok_or("the server under callgrind is not running")?;
        Ok(Self { server, pid, dumps, taken: 0 })
    }

    /// The annotated counts (inclusive, by function) of what the server
    /// ran during `work`, and `work`'s result.
    pub fn count<R>(&mut self, work: impl FnOnce(&Server) -> R) -> Result<(String, R), String> {
        control(self.pid, "-z")?;
        let result = work(&self.server);
        control(self.pid, "-d")?;
        self.taken += 1;
        Ok((annotate(&self.last_dump()?)?, result))
    }

    /// The file of the last dump taken.
    pub fn last_dump(&self) -> Result<std::path::PathBuf, String> {
        let part = format!(".out.{}", self.taken);
        let dump = std::fs::read_dir(self.dumps.path())
            .map_err(|e| e.to_string())?
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .find(|path| path.to_string_lossy().ends_with(&part));
        dump.ok_or_else(|| "callgrind wrote no dump".into())
    }
}

/// Counting is left out, not failed, where valgrind is missing.
fn valgrind_installed() -> Result<(), String> {
    let found = Command::new("valgrind").arg("--version").stdout(Stdio::null()).status();
    found.map(drop).map_err(|e| format!("cannot run valgrind ({e}): install it (apt install valgrind)"))
}

/// `callgrind_control -z` (zero the counts) or `-d` (dump them) of the
/// server with process id `pid`.
fn control(pid: u32, action: &str) -> Result<(), String> {
    let status = Command::new("callgrind_control")
        .args([action, &pid.to_string()])
        .stdout(Stdio::null())
        .status()
        .map_err(|e| format!("cannot run callgrind_control: {e}"))?;
    status.success().then_some(()).ok_or_else(|| format!("callgrind_control {action} exited with {status}"))
}

fn annotate(dump: &Path) -> Result<String, String> {
    let output = Command::new("callgrind_annotate")
        .args(["--inclusive=yes", "--threshold=100"])
        .arg(dump)
        .output()
        .map_err(|e| format!("cannot run callgrind_annotate: {e}"))?;
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The count on the first line naming `what` (`12,345 (1.2%)  ???:name`).
pub fn figure(annotated: &str, what: &str) -> Option<f64> {
    let line = annotated.lines().find(|line| line.contains(what))?;
    line.split_whitespace().next()?.replace(',', "").parse().ok()
}
