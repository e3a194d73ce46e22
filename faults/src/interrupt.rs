//! Ctrl-C (or SIGTERM) during `make faults`: the servers the run started
//! (and the Redisson workload's JVM, which runs in the run's directory)
//! are killed, stopped ones included (a SIGSTOPped primary would not act
//! on the terminal's SIGINT until continued), their directories removed,
//! and the partition's iptables rules dropped. Without this, an
//! interrupted run left all three behind.
//!
//! What is the run's is told by one directory: every server's directory
//! is made under it (`TMPDIR`, which `tempfile` follows), and a server is
//! the run's when it runs there (its `--dir`) or names it in its command
//! line (before it changes into it). Nothing outside it is touched, and
//! a reused pid cannot match.

use crate::partition::Partition;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// The run's directory; made here, removed by [`RunDir`]'s drop at a
/// normal end and by the handler at an interrupt. Call before any thread
/// starts (it sets `TMPDIR`).
pub struct RunDir(PathBuf);

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Makes the run's directory and installs the handler; the process exits
/// with 130 after cleaning up.
pub fn clean_up_on_interrupt() -> RunDir {
    let dir = std::env::temp_dir().join(format!("rlock-faults-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
    std::env::set_var("TMPDIR", &dir);
    // A thread that panics because its servers vanished under it waits
    // for the handler, which ends the process, instead of ending it first.
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if INTERRUPTED.load(Ordering::Relaxed) {
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        report(info)
    }));
    let run_dir = dir.clone();
    let installed = ctrlc::set_handler(move || {
        INTERRUPTED.store(true, Ordering::Relaxed);
        eprintln!("rlock-faults: interrupted; stopping the servers it started and healing the partition");
        clean_up(&run_dir);
        std::process::exit(130);
    });
    if let Err(why) = installed {
        eprintln!("rlock-faults: no cleanup on Ctrl-C ({why})");
    }
    RunDir(dir)
}

/// Kills the run's servers until a pass finds none (the main thread may
/// start one meanwhile), then removes the directory and the rules.
fn clean_up(run_dir: &Path) {
    for _ in 0..50 {
        Partition::clean_leftovers();
        let servers = servers_of(run_dir);
        if servers.is_empty() {
            break;
        }
        for pid in servers {
            let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = std::fs::remove_dir_all(run_dir);
    Partition::clean_leftovers();
}

/// The processes that run in `run_dir` or name it in their command line.
fn servers_of(run_dir: &Path) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return vec![] };
    let needle = run_dir.as_os_str().as_encoded_bytes();
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != std::process::id())
        .filter(|pid| {
            let runs_there = std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|cwd| cwd.starts_with(run_dir));
            let names_it = std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|cmdline| cmdline.windows(needle.len()).any(|window| window == needle));
            runs_there || names_it
        })
        .collect()
}
