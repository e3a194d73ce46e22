//! Hostile use of the inline request path (run_to_end), the latch sweeper
//! and the watchdog's wake-ups: futures polled once and dropped or parked,
//! other runtimes and executors, a client whose runtime is gone.

mod common;

use common::hostile::*;
use rlock_client::Client;
use std::task::Poll;
use std::time::Duration;
use testkit::{eventually, Server};

// ---------------------------------------------------------------------
// run_to_end: futures polled once and dropped, parked, raced
// ---------------------------------------------------------------------

/// README: "A `lock()` future dropped at any point leaves no subscription and
/// no lock behind". Drops a contended and an uncontended `lock()` after 1..N
/// polls (each poll a real trip through the runtime) and after timeouts of
/// growing length.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lock_futures_dropped_after_any_number_of_polls_leave_nothing() {
    let server = Server::shared();
    let client = client(&server, options()).await;
    let lock = client.lock("dropped-polls");
    for polls in 1..40 {
        let mut acquiring = Box::pin(lock.lock());
        let mut done = None;
        for _ in 0..polls {
            if let Poll::Ready(out) = poll_once(acquiring.as_mut()) {
                done = Some(out);
                break;
            }
            tokio::task::yield_now().await;
        }
        drop(done); // a guard that came is dropped too
        drop(acquiring);
        eventually!(format!("no lock after {polls} polls"), !exists(&server, "dropped-polls").await);
    }
    for micros in (0..3000).step_by(100) {
        let _ = tokio::time::timeout(Duration::from_micros(micros), lock.lock()).await;
        eventually!(format!("no lock after a {micros} µs timeout"), !exists(&server, "dropped-polls").await);
    }
    eventually!("no latch key left", latch_keys(&server).await == 0);
    assert_eq!(client.watchdog_stats().locks, 0);
}

/// `unlock()` polled once, then dropped (on the runtime and on a plain
/// thread): the release still runs to its end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unlock_polled_once_then_dropped_still_releases() {
    let server = Server::shared();
    let client = client(&server, options().with_watchdog_timeout(Duration::from_secs(60))).await;
    let lock = client.lock("unlock-once");
    for round in 0..20 {
        let guard = lock.lock().await.unwrap();
        let mut unlocking = Box::pin(guard.unlock());
        if let Poll::Ready(out) = poll_once(unlocking.as_mut()) {
            // The round trip can finish inside one poll on a fast machine.
            out.unwrap();
            continue;
        }
        if round % 2 == 0 {
            drop(unlocking);
        } else {
            std::thread::spawn(move || drop(unlocking)).join().unwrap();
        }
        eventually!(format!("round {round}: the lock released"), !exists(&server, "unlock-once").await);
        eventually!(format!("round {round}: no hold counted"), client.watchdog_stats().locks == 0);
    }
    eventually!("no latch key left", latch_keys(&server).await == 0);
}

/// `join!(guard.unlock(), lock.lock())` on one handle, cancelled at random
/// points by short timeouts: the client's hold count follows the server's
/// and every hold given back frees the key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raced_and_cancelled_unlock_and_lock_on_one_handle_keep_counts_in_step() {
    let server = Server::shared();
    let client = client(&server, options()).await;
    let lock = client.lock("raced");
    let mut guards = vec![lock.lock().await.unwrap()];
    let mut rng = 0x9e37_79b9_u64;
    for round in 0..150 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let cut = Duration::from_micros(rng % 1500);
        let guard = guards.pop();
        let both = async {
            let unlocked = async {
                if let Some(guard) = guard {
                    let _ = guard.unlock().await;
                }
            };
            tokio::join!(unlocked, lock.lock()).1
        };
        if let Ok(Ok(guard)) = tokio::time::timeout(cut, both).await {
            guards.push(guard);
        }
        // Settle everything dropped mid-way, then compare.
        let expected = guards.len() as i64;
        eventually!(format!("round {round}: server count {expected}"), {
            count_of(&server, "raced", lock.owner()).await.unwrap_or(0) == expected
        });
        if guards.is_empty() {
            guards.push(lock.lock().await.unwrap());
        }
        assert!(guards.iter().all(|g| !g.is_lost()), "round {round}: a live guard reported lost");
    }
    drop(guards);
    eventually!("the lock freed", !exists(&server, "raced").await);
    eventually!("no latch key left", latch_keys(&server).await == 0);
}

/// The lock's keys on the server that outlive its holds when a call is
/// dropped mid-way: the lock itself and a fair lock's queue.
async fn left_behind(server: &Server, name: &str) -> Vec<String> {
    let queue = rlock_protocol::fair_queue_key(name.as_bytes());
    let mut left = Vec::new();
    for key in [name.as_bytes(), &queue] {
        if redis::cmd("EXISTS").arg(key).query_async::<i64>(&mut common::admin(server).await).await.unwrap() == 1 {
            left.push(String::from_utf8_lossy(key).into_owned());
        }
    }
    left
}

/// `lock()`, `unlock()` and `try_lock()` of a fair lock and of both sides
/// of a read-write lock, and a `MultiLock` over every kind, dropped after
/// timeouts of growing length (each lands on another await point), with
/// the watchdog's lease long enough that a hold left behind would stay
/// for the whole test: every hold is given back, a dropped waiter leaves
/// the fair queue and is granted nothing once the holder goes, the
/// watchdog renews nothing, and the handles go on working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_of_every_kind_dropped_at_growing_deadlines_leave_nothing() {
    let server = Server::shared();
    let client = client(&server, options().with_watchdog_timeout(Duration::from_secs(60))).await;
    let holder = client.owned_by("the-holder");
    let rw = client.read_write_lock("dropped:rw");
    let kinds = [
        (client.fair_lock("dropped:fair"), holder.fair_lock("dropped:fair")),
        (rw.read(), holder.read_write_lock("dropped:rw").write()),
        (rw.write(), holder.read_write_lock("dropped:rw").write()),
    ];
    for (lock, other) in &kinds {
        let (kind, name) = (lock.kind(), String::from_utf8(lock.name().to_vec()).unwrap());
        for micros in (0..3000).step_by(200) {
            let cut = Duration::from_micros(micros);
            drop(tokio::time::timeout(cut, lock.lock()).await);
            let guard = lock.lock().await.unwrap();
            drop(tokio::time::timeout(cut, guard.unlock()).await);
            let outer = lock.lock().await.unwrap();
            if let Ok(Ok(inner)) = tokio::time::timeout(cut, lock.lock()).await {
                drop(tokio::time::timeout(cut, inner.unlock()).await);
            }
            outer.unlock().await.unwrap();
            eventually!(format!("{kind:?}, {micros} µs: nothing left"), left_behind(&server, &name).await.is_empty());
            // Contended: the waiter is dropped while it waits (blocked on the
            // server, or queued), then the holder goes.
            let held = other.lock().await.unwrap();
            drop(tokio::time::timeout(cut * 20, lock.try_lock(Duration::from_secs(5), None)).await);
            held.unlock().await.unwrap();
            eventually!(format!("{kind:?}, {micros} µs contended: nothing left"), {
                left_behind(&server, &name).await.is_empty()
            });
        }
        eventually!(format!("{kind:?}: nothing renewed"), client.watchdog_stats().locks == 0);
        let guard = lock.try_lock(Duration::ZERO, None).await.unwrap().expect("the handle still takes its lock");
        guard.unlock().await.unwrap();
    }
    let multi = rlock_client::MultiLock::new([
        client.lock("dropped:multi:plain"),
        client.fair_lock("dropped:multi:fair"),
        client.read_write_lock("dropped:multi:rw").write(),
    ]);
    let names = ["dropped:multi:plain", "dropped:multi:fair", "dropped:multi:rw"];
    for micros in (0..6000).step_by(200) {
        let cut = Duration::from_micros(micros);
        drop(tokio::time::timeout(cut, multi.lock()).await);
        let guard = multi.lock().await.unwrap();
        drop(tokio::time::timeout(cut, guard.unlock()).await);
        for name in names {
            eventually!(format!("MultiLock, {micros} µs: {name} left"), left_behind(&server, name).await.is_empty());
        }
    }
    eventually!("nothing renewed", client.watchdog_stats().locks == 0);
    eventually!("no latch key left", latch_keys(&server).await == 0);
}

/// Two `lock()`s on clones of one fair or read-write handle, then their
/// two `unlock()`s, each pair at once, while the watchdog renews (its
/// renewals land between and beside them; a lease shorter than a stall of
/// the machine ends the holds: with 150 ms, a loaded CI lost read holds to
/// a late round, each read hold having a timeout key of its own, see the
/// client guide's limits): both grants are counted,
/// no guard is reported lost, the count follows the guards, and the last
/// release frees the lock for good (no renewal brings it back).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_calls_at_once_on_clones_of_a_handle_beside_the_watchdog_keep_counts_in_step() {
    let server = Server::shared();
    // A lease that outlives the machine's stalls (a stall past it ends the
    // holds, which is not what this test is about), renewed every 400 ms:
    // each kind races until the watchdog has run beside it at least twice.
    let client = client(&server, options().with_watchdog_timeout(Duration::from_millis(1200))).await;
    let rw = client.read_write_lock("raced:rw");
    for lock in [client.fair_lock("raced:fair"), rw.read(), rw.write()] {
        let (kind, name) = (lock.kind(), String::from_utf8(lock.name().to_vec()).unwrap());
        let field = match kind {
            rlock_client::Kind::Write => rlock_protocol::rwlock_write_field(lock.owner()),
            _ => lock.owner().to_vec(),
        };
        let rounds = client.watchdog_stats().rounds;
        let deadline = std::time::Instant::now() + testkit::PATIENCE;
        for round in 0.. {
            if round >= 150 && client.watchdog_stats().rounds >= rounds + 2 {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{kind:?}: the watchdog did not run twice meanwhile");
            let other = lock.clone();
            let (first, second) = tokio::join!(lock.lock(), other.lock());
            let (first, second) = (first.unwrap(), second.unwrap());
            assert_eq!(count_of(&server, &name, &field).await, Some(2), "{kind:?}, round {round}: two grants");
            let (unlocked, other_unlocked) = tokio::join!(first.unlock(), second.unlock());
            assert!(
                unlocked.is_ok() && other_unlocked.is_ok(),
                "{kind:?}, round {round}: {unlocked:?}, {other_unlocked:?}"
            );
            assert!(!exists(&server, &name).await, "{kind:?}, round {round}: the lock left after both unlocks");
        }
        assert_eq!(client.watchdog_stats().lost, 0, "{kind:?}: a hold reported lost");
    }
    // Renewals sent while the last release ran found nothing to renew.
    let rounds = client.watchdog_stats().rounds;
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_eq!(client.watchdog_stats().rounds, rounds, "the watchdog renews a lock nobody holds");
    assert!(!exists(&server, "raced:fair").await && !exists(&server, "raced:rw").await);
}

/// A `lock()` future polled until its acquire is on the server, then parked
/// (kept, not polled, not dropped) as `select!` on `&mut fut` leaves it.
/// Requests run in their caller's task, so the parked call holds up the
/// other calls on the same lock and owner (README: poll such a future to
/// the end or drop it); dropping it lets them go on at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parked_lock_future_holds_up_its_lock_until_dropped() {
    let server = Server::shared();
    let client = client(&server, options()).await;
    let lock = client.lock("parked");
    let parked = loop {
        if let Some(parked) = park_after_acquire(&server, &lock).await {
            break parked;
        }
    };
    // Now the reply is in (or on its way), unread: nobody polls `parked`.
    let other = lock.clone();
    let mut reentry = tokio::spawn(async move { other.try_lock(Duration::ZERO, None).await.map(|g| g.is_some()) });
    assert!(tokio::time::timeout(Duration::from_millis(300), &mut reentry).await.is_err(), "held up while parked");
    drop(parked);
    let outcome = tokio::time::timeout(testkit::PATIENCE, reentry).await;
    assert!(matches!(outcome, Ok(Ok(Ok(_)))), "went on once the parked future was dropped: {outcome:?}");
    eventually!("the dropped future's grant was given back", !exists(&server, "parked").await);
}

/// The same parked future, granted on the server but left unpolled past
/// its lease (nothing records or renews the grant meanwhile), so another
/// client takes the lock. The parked caller's guard must then say so: it
/// is lost the moment it is handed over, never two holders at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_taken_after_its_lease_is_lost_at_once() {
    let server = Server::shared();
    let client = client(&server, options()).await; // watchdog 600 ms
    let lock = client.lock("parked-grant");
    let parked = loop {
        if let Some(parked) = park_after_acquire(&server, &lock).await {
            break parked;
        }
    };
    let rival_client = Client::connect(server.client(), options()).await.unwrap();
    let rival = rival_client.lock("parked-grant").try_lock(Duration::from_millis(1800), None).await.unwrap();
    assert!(rival.is_some(), "the unrenewed grant expired and the rival took the lock");
    let guard = parked.await.unwrap();
    assert!(guard.is_lost(), "a guard handed over after its lease ended is lost at once");
    tokio::time::timeout(Duration::from_secs(1), guard.lost()).await.expect("lost() fires at once");
}

// ---------------------------------------------------------------------
// Other executors and runtimes
// ---------------------------------------------------------------------

/// Acquire, re-enter, unlock from a plain thread with no Tokio context (the
/// README allows futures outside the runtime), uncontended and contended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_from_a_foreign_executor_work() {
    let server = Server::shared();
    let client = client(&server, options()).await;
    let lock = client.lock("foreign");
    let uncontended = {
        let lock = lock.clone();
        tokio::task::spawn_blocking(move || {
            block_on(async {
                let outer = lock.lock().await?;
                let inner = lock.try_lock(Duration::ZERO, Some(Duration::from_secs(5))).await?.unwrap();
                inner.unlock().await?;
                outer.unlock().await
            })
        })
        .await
    };
    assert!(matches!(uncontended, Ok(Ok(()))), "uncontended: {uncontended:?}");
    assert!(!exists(&server, "foreign").await);

    let holder = client.lock("foreign").lock_with_lease(Duration::from_millis(300)).await.unwrap();
    let contended = {
        let lock = lock.clone();
        tokio::task::spawn_blocking(move || {
            block_on(async { lock.try_lock(Duration::from_secs(5), None).await?.unwrap().unlock().await })
        })
        .await
    };
    drop(holder);
    assert!(matches!(contended, Ok(Ok(()))), "contended, from a foreign executor: {contended:?}");
}

/// The client made on a runtime of its own, used from the test's runtime;
/// guards dropped on a third (current-thread) runtime.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_from_another_runtime_works_and_releases_dropped_guards() {
    let server = Server::shared();
    let url = server.url();
    let (client_tx, client_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let home = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let client = runtime.block_on(Client::connect(redis::Client::open(url).unwrap(), options())).unwrap();
        client_tx.send(client).unwrap();
        let _ = stop_rx.recv();
        drop(runtime);
    });
    let client = client_rx.recv().unwrap();
    let lock = client.lock("other-runtime");
    for _ in 0..10 {
        let guard = lock.lock().await.unwrap();
        let again = lock.lock().await.unwrap();
        again.unlock().await.unwrap();
        std::thread::spawn(move || {
            let local = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            local.block_on(async move { drop(guard) });
        })
        .join()
        .unwrap();
        eventually!("the dropped guard released", !exists(&server, "other-runtime").await);
    }
    // Renewed across more than a lease (4 rounds of 200 ms; 600 ms) while used from here.
    let guard = lock.lock().await.unwrap();
    let rounds = client.watchdog_stats().rounds + 4;
    eventually!("more than a lease of rounds", client.watchdog_stats().rounds >= rounds);
    assert!(!guard.is_lost());
    assert_eq!(count_of(&server, "other-runtime", lock.owner()).await, Some(1));
    guard.unlock().await.unwrap();
    stop_tx.send(()).unwrap();
    home.join().unwrap();
}

/// A client, and a guard on "dead-runtime", made on a runtime since shut down.
fn client_of_a_dead_runtime(server: &Server) -> (Client, rlock_client::Guard) {
    let url = server.url();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let client = runtime.block_on(Client::connect(redis::Client::open(url).unwrap(), options())).unwrap();
        let guard = runtime.block_on(client.lock("dead-runtime").lock()).unwrap();
        drop(runtime);
        (client, guard)
    })
    .join()
    .unwrap()
}

/// The client's runtime shut down while the client and a guard live on in
/// another runtime: calls must fail (the README: "If that runtime has shut
/// down, the lock expires with its lease"), not panic the caller, and the
/// guard must say it is lost once nothing renews it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_whose_runtime_shut_down_fails_calls_without_panicking() {
    let server = Server::shared();
    let (client, guard) = client_of_a_dead_runtime(&server);
    let lock = client.lock("dead-runtime-2");
    let acquired =
        tokio::spawn(async move { lock.try_lock(Duration::from_millis(300), None).await.map(|g| g.is_some()) }).await;
    let unlocked = tokio::spawn(guard.unlock()).await;
    assert!(matches!(acquired, Ok(Err(_))), "lock() on a client whose runtime is gone: {acquired:?}");
    assert!(matches!(unlocked, Ok(Err(_))), "unlock() on a client whose runtime is gone: {unlocked:?}");
}

/// The client's runtime shut down: nothing renews its guards any more, so
/// lost() must fire (at the latest when the lease runs out).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guard_whose_client_runtime_shut_down_is_reported_lost() {
    let server = Server::shared();
    let (client, guard) = client_of_a_dead_runtime(&server);
    eventually!("the lease ran out on the server", !exists(&server, "dead-runtime").await);
    let lost = tokio::time::timeout(Duration::from_secs(2), guard.lost()).await;
    assert!(lost.is_ok(), "the lock expired on the server (nothing renews it) but lost() never fired");
    drop(client);
}

// ---------------------------------------------------------------------
// Latch sweeper
// ---------------------------------------------------------------------

/// Many releases (re-entered levels, so each is latched), some of them
/// dropped guards: no latch key stays behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latch_keys_do_not_pile_up() {
    let server = Server::shared();
    let client = client(&server, options()).await;
    let lock = client.lock("latches");
    let tasks: Vec<_> = (0..8)
        .map(|task| {
            let lock = client.lock(format!("latches-{task}"));
            tokio::spawn(async move {
                for i in 0..100 {
                    let guard = lock.lock().await.unwrap();
                    if i % 3 == 0 {
                        drop(guard);
                    } else {
                        guard.unlock().await.unwrap();
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let outer = lock.lock().await.unwrap();
    for _ in 0..100 {
        lock.lock().await.unwrap().unlock().await.unwrap();
    }
    outer.unlock().await.unwrap();
    eventually!("no latch key left", Duration::from_secs(3), latch_keys(&server).await == 0);
}

/// The client dropped right after an unlock: its latch key must still be
/// deleted (before the sweeper, a task per release deleted it whether or
/// not the client lived on), not linger for its lifetime (~40 s here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latch_keys_of_a_client_dropped_right_after_unlock_are_deleted() {
    let server = Server::shared();
    let options = options().with_watchdog_timeout(Duration::from_secs(30));
    for round in 0..20 {
        let client = client(&server, options.clone()).await;
        let guard = client.lock("latch-then-close").lock().await.unwrap();
        guard.unlock().await.unwrap();
        drop(client);
        eventually!(format!("round {round}: the latch key deleted with its client"), latch_keys(&server).await == 0);
    }
}

// ---------------------------------------------------------------------
// Watchdog wake-ups (note_grant)
// ---------------------------------------------------------------------

/// A fixed lease far shorter than the period: lost() fires when it ends,
/// not at the next round (period 10 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_fixed_lease_is_reported_lost_when_it_ends() {
    let server = Server::shared();
    let client = client(&server, options().with_watchdog_timeout(Duration::from_secs(30))).await;
    for round in 0..5 {
        let guard = client.lock("short-fixed").lock_with_lease(Duration::from_millis(300)).await.unwrap();
        let lost = tokio::time::timeout(Duration::from_millis(1500), guard.lost()).await;
        assert!(lost.is_ok(), "round {round}: lost() did not fire within 1.5 s of a 300 ms lease");
    }
}

/// Fixed short lease, then a watchdog re-entry: renewed (not lost) for
/// several leases; a watchdog hold with a short fixed re-entry is renewed
/// too, and the fixed hold left alone is reported lost when its own lease
/// ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_fixed_and_watchdog_reentries_are_renewed_and_lost_on_time() {
    let server = Server::shared();
    let client = client(&server, options()).await; // watchdog 600 ms, period 200 ms
    let lock = client.lock("mixed");
    let fixed = lock.lock_with_lease(Duration::from_millis(150)).await.unwrap();
    let renewed = lock.lock().await.unwrap();
    // More than a lease of rounds.
    let rounds = client.watchdog_stats().rounds + 4;
    eventually!("more than a lease of rounds", client.watchdog_stats().rounds >= rounds);
    assert!(!fixed.is_lost() && !renewed.is_lost(), "a renewed re-entry was lost");
    assert_eq!(count_of(&server, "mixed", lock.owner()).await, Some(2));
    fixed.unlock().await.unwrap();
    renewed.unlock().await.unwrap();
    assert!(!exists(&server, "mixed").await);

    // Long watchdog period: the remaining fixed hold's end must be noticed.
    let client = self::client(&server, options().with_watchdog_timeout(Duration::from_secs(30))).await;
    let lock = client.lock("mixed-2");
    let outer = lock.lock().await.unwrap();
    let inner = lock.lock_with_lease(Duration::from_millis(400)).await.unwrap();
    // Past the fixed lease (the time is what is under test: nothing shows it).
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(!inner.is_lost(), "the fixed re-entry was cut short by the watchdog hold");
    outer.unlock().await.unwrap();
    // The release re-leased the key to what `inner` needs (a few hundred ms at most).
    eventually!("the key expired with the fixed lease", Duration::from_secs(2), !exists(&server, "mixed-2").await);
    let lost = tokio::time::timeout(Duration::from_secs(2), inner.lost()).await;
    assert!(lost.is_ok(), "the fixed hold expired on the server but lost() did not fire (next round is 10 s away)");
}
