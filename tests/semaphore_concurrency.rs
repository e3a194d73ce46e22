//! A semaphore of 5 permits shared by 20 threads, each on its own
//! connection: never more than 5 inside at once. Inside, each thread
//! counts itself in a separate counter (INCR, checked, DECR) and gives its
//! permit back with RSEM.RELEASE; waiting threads poll RSEM.TRYACQUIRE.

use redis::Commands;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use testkit::Server;

const PERMITS: i64 = 5;
const THREADS: usize = 20;
const ENTRIES_EACH: usize = 40;

#[test]
fn never_more_holders_than_permits() {
    let server = Server::shared();
    let mut con = server.connection();
    let set: i64 = redis::cmd("RSEM.TRYSETPERMITS").arg("pool").arg(PERMITS).query(&mut con).unwrap();
    assert_eq!(set, 1);
    let most_inside = Arc::new(AtomicI64::new(0));
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let (mut con, most_inside) = (server.connection(), Arc::clone(&most_inside));
            std::thread::spawn(move || {
                for _ in 0..ENTRIES_EACH {
                    while redis::cmd("RSEM.TRYACQUIRE").arg("pool").query::<i64>(&mut con).unwrap() == 0 {
                        std::thread::yield_now();
                    }
                    let inside: i64 = con.incr("inside", 1).unwrap();
                    most_inside.fetch_max(inside, Ordering::Relaxed);
                    assert!(inside <= PERMITS, "{inside} holders of {PERMITS} permits");
                    let _: i64 = con.decr("inside", 1).unwrap();
                    let _: () = redis::cmd("RSEM.RELEASE").arg("pool").query(&mut con).unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("a thread failed");
    }
    let available: i64 = redis::cmd("RSEM.AVAILABLE").arg("pool").query(&mut con).unwrap();
    assert_eq!(available, PERMITS, "every permit came back");
    let most = most_inside.load(Ordering::Relaxed);
    assert!(most > 1, "threads overlapped inside (at most {most})");
    eprintln!("at most {most} of {PERMITS} inside at once");
}
