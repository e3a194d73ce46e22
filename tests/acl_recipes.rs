//! The ACL recipes of docs/commands.md ("Permissions (ACL)"), run as
//! documented (`testkit::acl_recipe`), at the command level: each user
//! runs its workload with no refusal in `ACL LOG`, and cannot do what the
//! recipe leaves out. Also the one channel rule: a user who may publish
//! nowhere takes and releases every kind; and the `@rlock` category where
//! the server's module API has categories. (Redisson's recipe:
//! `tests/redisson_acl_recipe.rs`; rlock-client's with the client itself:
//! `client/tests/acl_recipe.rs`.)

use redis::{Connection, Value};
use testkit::{acl_log, acl_recipe, acl_recipe_names, error_text, newer_than_redis_7_0, AclRecipe, Server};

fn run(con: &mut Connection, args: &[&str]) -> redis::RedisResult<Value> {
    redis::cmd(args[0]).arg(&args[1..]).query(con)
}

fn ok(con: &mut Connection, args: &[&str]) -> Value {
    run(con, args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

fn refused(con: &mut Connection, args: &[&str]) {
    let text = error_text(run(con, args));
    assert!(text.starts_with("NOPERM"), "{args:?}: {text}");
}

/// The recipe applied by `admin`, and a connection of its user.
fn login(server: &Server, admin: &mut Connection, recipe: &AclRecipe) -> Connection {
    recipe.apply(admin);
    recipe.connection(server)
}

fn reset_acl_log(admin: &mut Connection) {
    let () = redis::cmd("ACL").arg(&["LOG", "RESET"]).query(admin).unwrap();
}

/// The recipes this list names are run by tests/redisson_acl_recipe.rs
/// (`redisson`), this file (`rlock-client`, `operator`),
/// client/tests/acl_recipe.rs (`rlock-client`, `rlock-client-setinfo`) and
/// the Java suite's `AclRecipeTest` (`redisson`, `redisson-lua-texts`).
#[test]
fn every_documented_recipe_is_tested() {
    assert_eq!(
        acl_recipe_names(),
        ["redisson", "redisson-lua-texts", "rlock-client", "rlock-client-setinfo", "operator"]
    );
    for name in acl_recipe_names() {
        assert!(acl_recipe(name).user().starts_with("app-"), "{name}");
    }
}

/// What an rlock-client sends for every kind, at the command level (the
/// client's own run, waits and cluster included, is in client/tests).
#[test]
fn the_rlock_client_recipe_runs_every_kind_and_cannot_touch_other_holders_locks() {
    let server = Server::shared();
    let mut admin = server.connection();
    let mut app = login(&server, &mut admin, &acl_recipe("rlock-client"));
    reset_acl_log(&mut admin);
    let workload: &[&[&str]] = &[
        &["RLOCK.ACQUIRE", "app:l", "o", "30000", "ID", "r1", "REPLY", "FULL"],
        &["RLOCK.RENEW", "app:l", "o", "30000"],
        &["RLOCK.STATUS", "app:l", "o"],
        &["RLOCK.RELEASE", "app:l", "o", "30000", "ID", "r2"],
        // The client's latch sweep: its own latch key only.
        &["DEL", "redisson_unlock_latch:{app:l}:r2"],
        &["RFENCED.ACQUIRE", "app:fenced", "o", "30000", "ID", "r3"],
        &["RLOCK.RELEASE", "app:fenced", "o"],
        &["RFAIR.ACQUIRE", "app:f", "o", "30000", "WAIT", "5000"],
        &["RFAIR.ACQUIRE", "app:f", "p", "30000", "WAIT", "5000"],
        &["RFAIR.STATUS", "app:f", "p"],
        &["RFAIR.CANCEL", "app:f", "p"],
        &["RFAIR.RELEASE", "app:f", "o"],
        &["RRW.ACQUIRE", "app:rw", "o", "READ", "30000"],
        &["RRW.RENEW", "app:rw", "o", "30000"],
        &["RRW.RELEASE", "app:rw", "o", "READ"],
        &["RRW.ACQUIRE", "app:rw", "o", "WRITE", "30000", "ID", "r4"],
        &["RRW.STATUS", "app:rw", "o"],
        &["RRW.RELEASE", "app:rw", "o", "WRITE"],
        &["RSEM.TRYSETPERMITS", "app:s", "2"],
        &["RSEM.TRYACQUIRE", "app:s"],
        &["RSEM.RELEASE", "app:s"],
        &["RSEM.ADDPERMITS", "app:s", "1"],
        &["RSEM.AVAILABLE", "app:s"],
        &["RSEM.DRAIN", "app:s"],
        &["RPSEM.TRYSETPERMITS", "app:p", "2"],
        &["RPSEM.TRYACQUIRE", "app:p", "30000", "id1"],
        &["RPSEM.UPDATELEASE", "app:p", "id1", "30000"],
        &["RPSEM.LEASE", "app:p", "id1"],
        &["RPSEM.ACQUIRED", "app:p"],
        &["RPSEM.RELEASE", "app:p", "id1"],
        &["RPSEM.SETPERMITS", "app:p", "3"],
        &["RPSEM.ADDPERMITS", "app:p", "1"],
        &["RPSEM.AVAILABLE", "app:p"],
        &["RPSEM.PERMITS", "app:p"],
        &["RLATCH.TRYSETCOUNT", "app:c", "1"],
        &["RLATCH.COUNT", "app:c"],
        &["RLATCH.COUNTDOWN", "app:c"],
        &["RLATCH.TRYSETCOUNT", "app:c", "1"],
        &["RLATCH.DELETE", "app:c"],
        &["RLOCK.FORCERELEASE", "app:l"],
        &["INFO", "replication"],
        &["CLIENT", "INFO"],
        &["EXISTS", "{7}"],
    ];
    for args in workload {
        ok(&mut app, args);
    }
    assert_eq!(acl_log(&mut admin), Vec::<String>::new(), "no refusal in the workload");

    // Blocking waits: a wait the user gives up ends by CLIENT KILL.
    ok(&mut admin, &["RLOCK.ACQUIRE", "app:l", "other", "30000"]);
    let reply = ok(&mut app, &["RLOCK.ACQUIRE", "app:l", "o", "30000", "WAIT", "10"]);
    assert!(matches!(reply, Value::Int(pttl) if pttl > 0), "still held by the other: {reply:?}");

    // What it cannot do: another holder's lock, other names, the operator's view.
    for args in [
        &["DEL", "app:l"][..],
        &["UNLINK", "app:l"],
        &["HSET", "app:l", "o", "1"],
        &["DEL", "redisson_unlock_latch:{other:l}:r"],
        &["RLOCK.ACQUIRE", "other:l", "o", "30000"],
        &["RLOCK.RELEASE", "other:l", "o"],
        &["RLOCK.INSPECT", "app:l"],
        &["RLOCK.LIST", "0"],
        &["KEYS", "*"],
        &["PUBLISH", "redisson_lock__channel:{app:l}", "0"],
        &["SUBSCRIBE", "redisson_lock__channel:{other:l}"],
        &["EXISTS", "app:l"],
    ] {
        refused(&mut app, args);
    }
    assert_eq!(ok(&mut admin, &["HGET", "app:l", "other"]), Value::BulkString(b"1".to_vec()), "still held");
}

#[test]
fn the_operator_recipe_reads_every_kind_and_changes_nothing() {
    let server = Server::shared();
    let mut admin = server.connection();
    for args in [
        &["RLOCK.ACQUIRE", "app:l", "o", "30000"][..],
        &["RFAIR.ACQUIRE", "app:f", "o", "30000"],
        &["RFAIR.ACQUIRE", "app:f", "p", "30000", "WAIT", "30000"],
        &["RRW.ACQUIRE", "app:rw", "o", "READ", "30000"],
        &["RSEM.TRYSETPERMITS", "app:s", "2"],
    ] {
        ok(&mut admin, args);
    }
    let mut operator = login(&server, &mut admin, &acl_recipe("operator"));
    reset_acl_log(&mut admin);
    let inspected = format!("{:?}", ok(&mut operator, &["RLOCK.INSPECT", "app:f"]));
    assert!(inspected.contains("fair") && inspected.contains("\"p\""), "the queue is read: {inspected}");
    let listed = format!("{:?}", ok(&mut operator, &["RLOCK.LIST", "0", "COUNT", "1000"]));
    for key in ["app:l", "app:f", "app:rw"] {
        assert!(listed.contains(&format!("\"{key}\"")), "{key} listed: {listed}");
    }
    for args in [
        &["RLOCK.WAITERS"][..],
        &["RLOCK.STATUS", "app:l", "o"],
        &["RFAIR.STATUS", "app:f", "p"],
        &["RRW.STATUS", "app:rw"],
    ] {
        ok(&mut operator, args);
    }
    assert_eq!(acl_log(&mut admin), Vec::<String>::new(), "no refusal in the workload");
    for args in [
        &["RLOCK.ACQUIRE", "app:x", "o", "30000"][..],
        &["RLOCK.RELEASE", "app:l", "o"],
        &["RLOCK.FORCERELEASE", "app:l"],
        &["RFAIR.CANCEL", "app:f", "p"],
        &["RSEM.TRYACQUIRE", "app:s"],
        &["DEL", "app:l"],
        &["HGETALL", "app:l"],
        &["RLOCK.INSPECT", "other:l"],
    ] {
        refused(&mut operator, args);
    }
    assert_eq!(ok(&mut admin, &["HGET", "app:l", "o"]), Value::BulkString(b"1".to_vec()), "still held");
}

/// The defect this rule fixes: a user who may publish nowhere took locks
/// it could not release (RRW, RSEM, RLATCH refused their channel).
#[test]
fn a_user_who_may_publish_nowhere_takes_and_releases_every_kind() {
    let server = Server::shared();
    let mut quiet = server.login("quiet", &["~*", "resetchannels"]);
    let mut admin = server.connection();
    let mut waiter = admin.as_pubsub();
    waiter.psubscribe("redisson_*").unwrap();
    let calls: &[(&[&str], Option<&str>)] = &[
        (&["RLOCK.ACQUIRE", "app:l", "o", "30000"], None),
        (&["RLOCK.RELEASE", "app:l", "o"], Some("redisson_lock__channel:{app:l}")),
        (&["RFAIR.ACQUIRE", "app:f", "o", "30000"], None),
        (&["RFAIR.ACQUIRE", "app:f", "p", "30000", "WAIT", "30000"], None),
        (&["RFAIR.RELEASE", "app:f", "o"], Some("redisson_lock__channel:{app:f}:p")),
        (&["RRW.ACQUIRE", "app:rw", "o", "WRITE", "30000"], None),
        (&["RRW.RELEASE", "app:rw", "o", "WRITE"], Some("redisson_rwlock:{app:rw}")),
        (&["RFENCED.ACQUIRE", "app:fenced", "o", "30000"], None),
        (&["RLOCK.RELEASE", "app:fenced", "o"], Some("redisson_lock__channel:{app:fenced}")),
        (&["RSEM.TRYSETPERMITS", "app:s", "1"], Some("redisson_sc:{app:s}")),
        (&["RSEM.TRYACQUIRE", "app:s"], None),
        (&["RSEM.RELEASE", "app:s"], Some("redisson_sc:{app:s}")),
        (&["RPSEM.TRYSETPERMITS", "app:p", "1"], Some("redisson_sc:{app:p}")),
        (&["RPSEM.TRYACQUIRE", "app:p", "30000", "id"], None),
        (&["RPSEM.RELEASE", "app:p", "id"], Some("redisson_sc:{app:p}")),
        (&["RLATCH.TRYSETCOUNT", "app:c", "1"], Some("redisson_countdownlatch__channel__{app:c}")),
        (&["RLATCH.COUNTDOWN", "app:c"], Some("redisson_countdownlatch__channel__{app:c}")),
    ];
    for (args, channel) in calls {
        ok(&mut quiet, args);
        if let Some(channel) = channel {
            let message = waiter.get_message().unwrap();
            assert_eq!(message.get_channel_name(), *channel, "{args:?}: announced");
        }
    }
    drop(waiter);
    let mut admin = server.connection();
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("app:*").query(&mut admin).unwrap();
    keys.sort();
    assert_eq!(keys, ["app:p", "app:s"], "every lock released, the latch opened (the semaphores stay)");
    // Its own subscriptions stay restricted by its channel rules.
    refused(&mut quiet, &["SUBSCRIBE", "redisson_lock__channel:{app:l}"]);
}

/// `@rlock` where the module API has categories (Redis 7.2+, Valkey 8),
/// with every command of the module; Redis 7.0 has none.
#[test]
fn the_rlock_category_holds_every_command_where_the_server_has_module_categories() {
    let server = Server::shared();
    let mut admin = server.connection();
    let has_categories = newer_than_redis_7_0(&mut admin);
    let category: redis::RedisResult<Vec<String>> = redis::cmd("ACL").arg(&["CAT", "rlock"]).query(&mut admin);
    if !has_categories {
        assert!(category.is_err(), "no @rlock on Redis 7.0: {category:?}");
        eprintln!("skipped on {}: @rlock's commands, as Redis 7.0 has no module ACL categories", testkit::server_bin());
        return;
    }
    let mut listed = category.unwrap();
    let mut commands: Vec<String> =
        redis::cmd("COMMAND").arg(&["LIST", "FILTERBY", "MODULE", "rlock"]).query(&mut admin).unwrap();
    listed.sort();
    commands.sort();
    assert_eq!(listed, commands);
    let mut user = server.login("locks-only", &["-@all", "+@rlock", "~app:*", "~redisson_*{app:*"]);
    ok(&mut user, &["RLOCK.ACQUIRE", "app:l", "o", "30000"]);
    ok(&mut user, &["RLOCK.RELEASE", "app:l", "o"]);
    refused(&mut user, &["GET", "app:l"]);
}

/// Refusals of keys by the module (derived ones, `RLOCK.WAITERS`'s) are in
/// `ACL LOG` as Redis's own are (reason `key`, the key); what inspection
/// cannot read is no refusal.
#[test]
fn the_modules_refusals_are_in_the_acl_log_and_inspection_logs_none() {
    let server = Server::shared();
    let mut admin = server.connection();
    let mut names_only = server.login("names-only", &["~app:*"]);
    ok(&mut names_only, &["RLOCK.ACQUIRE", "app:l", "o", "30000"]);
    reset_acl_log(&mut admin);
    let refusals = [
        (&["RLOCK.ACQUIRE", "app:k", "o", "30000", "ID", "r1"][..], "rlock_acquire_record:{app:k}:r1"),
        (&["RLOCK.RELEASE", "app:l", "o", "30000", "ID", "r2"], "redisson_unlock_latch:{app:l}:r2"),
        (&["RFAIR.ACQUIRE", "app:f", "o", "30000", "WAIT", "1000"], "redisson_lock_queue:{app:f}"),
        // A key argument the command does not declare, checked by the module.
        (&["RLOCK.WAITERS", "other:l"], "other:l"),
    ];
    for (args, key) in refusals {
        refused(&mut names_only, args);
        let log = acl_log(&mut admin);
        assert!(log[0].contains("\"key\"") && log[0].contains(key), "{args:?}: {log:?}");
    }
    reset_acl_log(&mut admin);
    ok(&mut names_only, &["RLOCK.INSPECT", "app:l"]);
    ok(&mut names_only, &["RLOCK.LIST", "0"]);
    assert_eq!(acl_log(&mut admin), Vec::<String>::new(), "derived keys read as missing, not refused");
}
