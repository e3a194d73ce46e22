//! The partition fault: the primary cut off from its replicas and
//! Sentinels (which connect from [`PEER_SOURCE`]) but not from its
//! clients, by iptables rules on its port; and the host crash's half of
//! it: the primary's packets to them dropped.

use std::process::Command;
use std::time::{Duration, Instant};
use testkit::PEER_SOURCE;

/// Cuts the primary on `port` off from the replicas and Sentinels (which
/// connect from 127.0.0.3) while its clients still reach it; healed on drop.
pub struct Partition {
    rules: Vec<Vec<String>>,
}

/// Every rule the suite adds carries this comment, so that a run that
/// died before healing is cleaned up by the next.
const RULE_TAG: &str = "rlock-faults";

impl Partition {
    pub fn cut(port: u16) -> Partition {
        // Both ways: the peers' packets to the port, the port's to the peers.
        Partition::drop_packets(vec![rule(PEER_SOURCE, "--dport", "127.0.0.1", port), silenced(port)])
    }

    /// Drops only what the primary on `port` sends its replicas and
    /// Sentinels: the replication stream stops reaching them, though the
    /// primary still hears their acknowledgements (of what they have), so
    /// it goes on taking writes, as it would in the moments before its
    /// host crashes. Healed on drop.
    pub fn silence(port: u16) -> Partition {
        Partition::drop_packets(vec![silenced(port)])
    }

    fn drop_packets(rules: Vec<Vec<String>>) -> Partition {
        for rule in &rules {
            iptables("-I", rule).unwrap_or_else(|why| panic!("iptables: {why}"));
        }
        Partition { rules }
    }

    /// Whether this process may add iptables rules (root, with iptables).
    pub fn available() -> Result<(), String> {
        iptables("-S", &["INPUT".to_owned()]).map(drop)
    }

    /// Removes the rules a run that died left behind.
    pub fn clean_leftovers() {
        let Ok(rules) = iptables("-S", &["INPUT".to_owned()]) else { return };
        for line in rules.lines().filter(|line| line.contains(RULE_TAG)) {
            let rule: Vec<String> = line
                .trim_start_matches("-A ")
                .split_whitespace()
                .map(|word| word.trim_matches('"').to_owned())
                .collect();
            let _ = iptables("-D", &rule);
        }
    }
}

/// A rule that drops the TCP packets from `from` to `to` whose `port_flag`
/// (`--dport` or `--sport`) is `port`.
fn rule(from: &str, port_flag: &str, to: &str, port: u16) -> Vec<String> {
    let port = port.to_string();
    let words = ["INPUT", "-p", "tcp", "-s", from, "-d", to, port_flag, &port, "-m", "comment"];
    words.iter().chain(&["--comment", RULE_TAG, "-j", "DROP"]).map(|word| word.to_string()).collect()
}

/// The rule that drops the packets from the primary's `port` to its peers.
fn silenced(port: u16) -> Vec<String> {
    rule("127.0.0.1", "--sport", PEER_SOURCE, port)
}

impl Drop for Partition {
    fn drop(&mut self) {
        for rule in &self.rules {
            let _ = iptables("-D", rule);
        }
    }
}

fn iptables(action: &str, rule: &[String]) -> Result<String, String> {
    let output = Command::new("iptables").arg(action).args(rule).output().map_err(|e| format!("run iptables: {e}"))?;
    match output.status.success() {
        true => Ok(String::from_utf8_lossy(&output.stdout).into_owned()),
        false => Err(String::from_utf8_lossy(&output.stderr).trim().to_owned()),
    }
}

/// Waits up to `within` for `check`, polling.
pub fn wait_for(within: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}
