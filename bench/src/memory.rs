//! Section 5: Redis memory per held lock, next to a SET-NX lock.

use crate::raw::{encode, RawConnection};
use crate::report::{ratio, Table};
use crate::server_info;
use testkit::Server;

const LOCKS: usize = 100_000;
const BATCH: usize = 1000;
const OWNER: &[u8] = b"8f2c6e1a-5b7d-4c1e-9a3f-2d4b6c8e0f1a:1";

/// Bytes per lock taken with `command(key)`, and MEMORY USAGE of one key.
fn per_lock(server: &Server, command: impl Fn(&[u8]) -> Vec<u8>) -> (f64, i64) {
    let _: () = redis::cmd("FLUSHALL").query(&mut server.connection()).expect("FLUSHALL");
    let before = server_info::field(server, "memory", "used_memory");
    let mut connection = RawConnection::connect(server.port());
    for start in (0..LOCKS).step_by(BATCH) {
        let batch: Vec<u8> = (start..start + BATCH).flat_map(|n| command(format!("lock:{n}").as_bytes())).collect();
        connection.round_trip(&batch, BATCH);
    }
    let after = server_info::field(server, "memory", "used_memory");
    let sample: i64 = redis::cmd("MEMORY").arg("USAGE").arg("lock:0").query(&mut server.connection()).expect("MEMORY");
    ((after - before) / LOCKS as f64, sample)
}

pub fn run(server: &Server) -> Table {
    let (rlock, rlock_sample) = per_lock(server, |key| encode(&[b"RLOCK.ACQUIRE", key, OWNER, b"600000"]));
    let (set_nx, set_nx_sample) = per_lock(server, |key| encode(&[b"SET", key, OWNER, b"NX", b"PX", b"600000"]));
    let _: () = redis::cmd("FLUSHALL").query(&mut server.connection()).expect("FLUSHALL");
    let mut table =
        Table::new(&["lock style", "used_memory bytes per lock", "MEMORY USAGE of one lock key", "÷ SET NX"]);
    table.row(vec![
        "rlock / Redisson (hash, one field)".into(),
        format!("{rlock:.0}"),
        rlock_sample.to_string(),
        ratio(rlock, set_nx),
    ]);
    table.row(vec!["`SET NX PX` (string)".into(), format!("{set_nx:.0}"), set_nx_sample.to_string(), "1.00×".into()]);
    table
}
