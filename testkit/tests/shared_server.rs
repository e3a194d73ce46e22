//! The pool of reused servers: what one test leaves behind is gone for the
//! next, and a server that cannot be put back is not lent again. One test,
//! so that nothing else takes from the pool between its steps.

use redis::{Connection, Value};
use testkit::{eventually, rlock_info, Server, PATIENCE};

fn run(con: &mut Connection, args: &[&str]) -> Value {
    redis::cmd(args[0]).arg(&args[1..]).query(con).unwrap_or_else(|e| panic!("{}: {e}", args.join(" ")))
}

fn config(con: &mut Connection, name: &str) -> String {
    let (_, value): (String, String) = redis::cmd("CONFIG").arg("GET").arg(name).query(con).unwrap();
    value
}

#[test]
fn a_returned_server_comes_back_reset_and_a_changed_one_is_not_lent_again() {
    // A test leaves data, a script, settings, a user, a holder and a blocked waiter.
    let (port, script, default_lease, waiter) = {
        let server = Server::shared();
        let mut con = server.connection();
        let default_lease = config(&mut con, "rlock.default-lease-ms");
        run(&mut con, &["SET", "left", "behind"]);
        let Value::BulkString(script) = run(&mut con, &["SCRIPT", "LOAD", "return 1"]) else { panic!("a sha") };
        run(&mut con, &["CONFIG", "SET", "rlock.default-lease-ms", "1234"]);
        run(&mut con, &["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
        run(&mut con, &["ACL", "SETUSER", "left-behind", "on", ">pw", "+@all", "~*"]);
        run(&mut con, &["RLOCK.ACQUIRE", "lock", "holder", "60000"]);
        let mut waiting = server.connection();
        let waiter = std::thread::spawn(move || {
            redis::cmd("RLOCK.ACQUIRE").arg(&["lock", "waiter", "60000", "WAIT", "60000"]).query::<Value>(&mut waiting)
        });
        eventually("the waiter blocked", PATIENCE, || rlock_info(&mut con, "blocked") == 1);
        (server.port(), String::from_utf8(script).unwrap(), default_lease, waiter)
    };
    assert!(waiter.join().unwrap().is_err(), "the blocked waiter was disconnected");

    let server = Server::shared();
    assert_eq!(server.port(), port, "the same server, lent again");
    let mut con = server.connection();
    assert_eq!(run(&mut con, &["DBSIZE"]), Value::Int(0));
    assert_eq!(run(&mut con, &["SCRIPT", "EXISTS", &script]), Value::Array(vec![Value::Int(0)]));
    assert_eq!(config(&mut con, "rlock.default-lease-ms"), default_lease);
    assert_eq!(config(&mut con, "notify-keyspace-events"), "");
    let users: Vec<String> = redis::cmd("ACL").arg("USERS").query(&mut con).unwrap();
    assert_eq!(users, ["default"]);
    assert_eq!(rlock_info(&mut con, "blocked"), 0);
    let clients: String = redis::cmd("CLIENT").arg("LIST").query(&mut con).unwrap();
    assert_eq!(clients.lines().count(), 1, "{clients}");
    drop(con);
    drop(server);

    // A server made a replica cannot be put back: it is stopped, not lent.
    let replica_port = {
        let primary = Server::start();
        let replica = Server::shared(); // the idle one
        replica.replicate(&primary);
        replica.port()
    };
    let next = Server::shared();
    assert_ne!(next.port(), replica_port, "a replica was lent again");
}
