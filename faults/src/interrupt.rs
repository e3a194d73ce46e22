//! Ctrl-C (or SIGTERM) during `make faults`: the servers the run started
//! are killed, stopped ones included (a SIGSTOPped primary would not act
//! on the terminal's SIGINT until continued), their directories removed,
//! and the partition's iptables rules dropped. Without this, an
//! interrupted run left all three behind.

use crate::partition::Partition;
use std::path::PathBuf;

/// Installs the handler; the process exits with 130 after cleaning up.
pub fn clean_up_on_interrupt() {
    let installed = ctrlc::set_handler(|| {
        eprintln!("rlock-faults: interrupted; stopping the servers it started and healing the partition");
        clean_up();
        std::process::exit(130);
    });
    if let Err(why) = installed {
        eprintln!("rlock-faults: no cleanup on Ctrl-C ({why})");
    }
}

fn clean_up() {
    Partition::clean_leftovers();
    for (pid, dir) in children() {
        for signal in ["-CONT", "-KILL"] {
            let _ = std::process::Command::new("kill").args([signal, &pid.to_string()]).status();
        }
        let started_here = dir
            .as_ref()
            .and_then(|dir| dir.file_name())
            .is_some_and(|name| name.to_string_lossy().starts_with("rlock-"));
        if let (Some(dir), true) = (dir, started_here) {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// This process's children (the servers and Sentinels testkit spawned),
/// each with its working directory (its `--dir`).
fn children() -> Vec<(u32, Option<PathBuf>)> {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else { return vec![] };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| parent_of(*pid) == Some(me))
        .map(|pid| (pid, std::fs::read_link(format!("/proc/{pid}/cwd")).ok()))
        .collect()
}

/// The parent in `/proc/<pid>/stat`: the field after the state, which
/// follows the command name in parentheses (which may hold spaces).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
}
