//! Figures read from the server's INFO sections.

use testkit::Server;

/// A numeric `name:value` field of one INFO section.
pub fn field(server: &Server, section: &str, name: &str) -> f64 {
    let info: String = redis::cmd("INFO").arg(section).query(&mut server.connection()).expect("INFO");
    let prefix = format!("{name}:");
    info.lines().find_map(|line| line.strip_prefix(&prefix)).and_then(|v| v.trim().parse().ok()).unwrap_or(0.0)
}

/// One statistic (`calls`, `usec`, ...) of a command from
/// `INFO commandstats`; 0 when the command has not run.
pub fn command_stat(server: &Server, command: &str, stat: &str) -> f64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query(&mut server.connection()).expect("INFO");
    let (line_prefix, stat_prefix) = (format!("cmdstat_{command}:"), format!("{stat}="));
    info.lines()
        .find_map(|line| line.strip_prefix(&line_prefix))
        .and_then(|stats| stats.split(',').find_map(|kv| kv.strip_prefix(&stat_prefix)))
        .and_then(|value| value.parse().ok())
        .unwrap_or(0.0)
}
