//! Markdown output.

use std::fmt::Write;

pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(headers: &[&str]) -> Self {
        Self { headers: headers.iter().map(|h| h.to_string()).collect(), rows: vec![] }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }
}

impl std::fmt::Display for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let line = |cells: &[String]| format!("| {} |", cells.join(" | "));
        writeln!(f, "{}", line(&self.headers))?;
        writeln!(f, "|{}", " --- |".repeat(self.headers.len()))?;
        for row in &self.rows {
            writeln!(f, "{}", line(row))?;
        }
        Ok(())
    }
}

/// `a ÷ b` as "3.2×".
pub fn ratio(a: f64, b: f64) -> String {
    if b == 0.0 {
        return "n/a".into();
    }
    format!("{:.2}×", a / b)
}

/// A description of this machine and the software measured.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("model name").map(|m| m.trim_start_matches([' ', '\t', ':']).to_string()))
        })
        .unwrap_or_else(|| "unknown".into());
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            info.lines().next().map(|l| l.split_whitespace().nth(1).unwrap_or("0").parse::<u64>().unwrap_or(0))
        })
        .map_or("unknown".into(), |kb| format!("{:.0} GiB", kb as f64 / 1024.0 / 1024.0));
    let command = |program: &str, arg: &str| {
        std::process::Command::new(program)
            .arg(arg)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_default()
    };
    let mut out = String::new();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let _ = writeln!(out, "- CPU: {cpu}, {cores} cores available");
    let _ = writeln!(out, "- memory: {memory}");
    let _ = writeln!(out, "- kernel: {}", command("uname", "-r"));
    let _ = writeln!(out, "- server: {}", command(&testkit::server_bin(), "--version"));
    let _ = writeln!(out, "- rustc: {}", command("rustc", "--version"));
    out
}
