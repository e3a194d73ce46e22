//! `make run`'s server: redis.conf's directives, as `redis-server
//! redis.conf` reads them (on a free port and a directory of its own, the
//! module's path made absolute), load the module, let `MODULE UNLOAD` and
//! `MODULE LOAD` run from loopback as README shows, and leave the
//! Redisson filter at the server's default.

use redis::{Connection, Value};
use testkit::{listed_module, module_path, newer_than_redis_7_0, Server};

/// redis.conf as `make run` gives it, but for the paths: the server's own
/// directory (the builder's) instead of `dir`, and the module built for
/// the tests instead of the release build (its arguments kept).
fn make_run_conf() -> String {
    let text = include_str!("../redis.conf");
    let module = module_path().to_str().expect("a UTF-8 module path");
    let mut loads = 0;
    let lines =
        text.lines().filter(|line| !line.starts_with("dir ")).map(|line| match line.strip_prefix("loadmodule ") {
            Some(rest) => {
                loads += 1;
                let args = rest.split_once(' ').map_or("", |(_, args)| args);
                format!("loadmodule {module} {args}")
            }
            None => line.to_owned(),
        });
    let conf: Vec<String> = lines.collect();
    assert_eq!(loads, 1, "redis.conf loads the module once");
    conf.join("\n")
}

fn config_get(con: &mut Connection, name: &str) -> String {
    let (_, value): (String, String) = redis::cmd("CONFIG").arg("GET").arg(name).query(con).unwrap();
    value
}

#[test]
fn make_runs_server_loads_the_module_and_lets_loopback_unload_and_load_it() {
    let server = Server::builder().without_module().conf(&make_run_conf()).start();
    let mut con = server.connection(); // 127.0.0.1: loopback
    assert!(listed_module(&mut con, "rlock").is_some(), "rlock loaded");
    assert_eq!(config_get(&mut con, "enable-module-command"), "local");
    assert_eq!(config_get(&mut con, "rlock.default-lease-ms"), "30000");

    let _: () = redis::cmd("MODULE").arg("UNLOAD").arg("rlock").query(&mut con).unwrap();
    assert_eq!(listed_module(&mut con, "rlock"), None, "rlock unloaded");
    let _: () = redis::cmd("MODULE").arg("LOAD").arg(module_path().to_str().unwrap()).query(&mut con).unwrap();
    assert!(listed_module(&mut con, "rlock").is_some(), "rlock loaded again");
    let granted: Value = redis::cmd("RLOCK.ACQUIRE").arg(&["k", "me", "30000"]).query(&mut con).unwrap();
    assert_eq!(granted, Value::Nil);
}

#[test]
fn make_run_leaves_the_redisson_filter_at_the_servers_default() {
    let conf = make_run_conf();
    let set_here = conf.lines().any(|line| line.contains("redisson-scripts") && !line.starts_with('#'));
    assert!(!set_here, "redis.conf sets rlock.redisson-scripts");
    let server = Server::builder().without_module().conf(&conf).start();
    let default = Server::shared(); // the module with no arguments
    let filter = config_get(&mut server.connection(), "rlock.redisson-scripts");
    assert_eq!(filter, config_get(&mut default.connection(), "rlock.redisson-scripts"));
    // Off where the filter cannot learn its caller (Redis 7.0).
    let expected = if newer_than_redis_7_0(&mut server.connection()) { "native" } else { "off" };
    assert_eq!(filter, expected, "on {}", testkit::server_bin());
}
