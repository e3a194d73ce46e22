//! Kinds whose holds the server counts as one: a plain, a fair and a
//! fenced lock of one name and owner id (`Client::owned_by`) are levels of one
//! hash field with one expiry. Each kind's grants, leases and losses must
//! leave the others' holds as they are.

mod common;

use common::counts::{client, hold_count, options, WATCHDOG};
use common::{admin, stall, stallable_server};
use rlock_client::{Client, Guard};
use std::time::Duration;
use testkit::{eventually, Server, PATIENCE};

/// One owner id used for a plain, a fenced and a fair lock on one name: the
/// server counts their holds as one, so each kind's grant sees the others'
/// levels and must not give them back (a reviewer's double grant: the
/// fenced acquire released the plain hold's level, and after the plain
/// unlock another owner took the lock while the fenced guard looked held).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kinds_sharing_an_owner_id_never_give_back_each_others_levels() {
    let server = Server::shared();
    let client = client(&server).await;
    let me = client.owned_by("me");
    let (plain, fenced, fair) = (me.lock("x"), me.fenced_lock("x"), me.fair_lock("x"));
    let first = plain.lock().await.unwrap();
    let second = fenced.lock().await.unwrap();
    let third = fair.lock().await.unwrap();
    eventually!("no level given back", hold_count(&server, "x", b"me").await == 3);
    first.unlock().await.unwrap();
    second.unlock().await.unwrap();
    assert!(client.lock("x").try_lock(Duration::ZERO, None).await.unwrap().is_none(), "the fair hold still holds it");
    assert!(!third.is_lost());
    third.unlock().await.unwrap();
    assert!(client.lock("x").try_lock(Duration::ZERO, None).await.unwrap().is_some());
}

/// The same, the plain lock taken after the fenced one and re-entered: a
/// plain acquire names the levels its own holds count (`HOLDS n`), which
/// the server's count (the fenced level too) does not match.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_reentry_beside_a_fenced_hold_of_its_owner_keeps_both() {
    let server = Server::shared();
    let client = client(&server).await;
    let me = client.owned_by("me");
    let (plain, fenced) = (me.lock("y"), me.fenced_lock("y"));
    let fenced_guard = fenced.lock().await.unwrap();
    let outer = plain.lock().await.unwrap();
    let inner = plain.lock().await.unwrap();
    assert_eq!(hold_count(&server, "y", b"me").await, 3);
    assert!(!outer.is_lost() && !inner.is_lost() && !fenced_guard.is_lost(), "a hold taken for lost");
    inner.unlock().await.unwrap();
    outer.unlock().await.unwrap();
    assert_eq!(hold_count(&server, "y", b"me").await, 1);
    assert!(!fenced_guard.is_lost());
    fenced_guard.unlock().await.unwrap();
    assert_eq!(hold_count(&server, "y", b"me").await, 0);
}

/// A re-entry never shortens the lease the holds already taken need; a
/// fenced (or fair) acquire of the plain lock's owner id is a re-entry on
/// the server (one count, one key, one expiry), yet it sent only the lease
/// its own kind's holds need: a 300 ms fenced hold cut the plain hold's
/// 10 s to 300 ms, and another owner took the lock while the plain guard
/// looked held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_kinds_short_reentry_keeps_the_plain_holds_lease() {
    let server = Server::shared();
    let client = client(&server).await;
    let plain = client.owned_by("me").lock("kinds-lease");
    let fenced = client.owned_by("me").fenced_lock("kinds-lease");
    let outer = plain.lock_with_lease(Duration::from_secs(10)).await.unwrap();
    let inner = fenced.lock_with_lease(Duration::from_millis(300)).await.unwrap();
    inner.unlock().await.unwrap();
    let other = client.lock("kinds-lease");
    let taken = other.try_lock(Duration::from_secs(1), None).await.unwrap();
    assert!(taken.is_none() || outer.is_lost(), "another owner took the lock while the plain guard looked held");
    assert!(!outer.is_lost());
    outer.unlock().await.unwrap();
}

/// Kinds counted together share one gate, and a fair waiter blocking on
/// the server holds it for its whole call (up to 30 s); the watchdog marks
/// a hold lost on a refused renewal only when it gets the gate at once (a
/// request in flight settles the holds itself). The plain hold of the same
/// owner, deleted and taken by another owner meanwhile, is then reported
/// lost when its lease ends by the client's clock (the refused renewal set
/// none), not at the refused renewal: later, never after the lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_hold_is_reported_lost_while_a_fair_waiter_of_its_owner_blocks() {
    let server = Server::shared();
    let scene = delete_under_a_fair_waiter(&server, "kinds-gate").await;
    let lost = tokio::time::timeout(WATCHDOG * 2, scene.held.lost()).await;
    assert!(lost.is_ok(), "another owner holds the lock, yet the plain guard looks held");
    scene.other.unlock().await.unwrap();
    scene.waiter.await.unwrap().unwrap().unlock().await.unwrap();
}

/// The same, the other owner releasing while the fair waiter blocks: the
/// fair waiter is granted (the owner's count is 1: its level alone), and
/// the plain hold, whose level was deleted, is renewed from then on by
/// the fair level (one count for both kinds): it looked held for ever, and
/// its unlock released the fair hold's level, so that another owner took
/// the lock while the fair guard looked held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_hold_deleted_while_a_fair_waiter_of_its_owner_blocks_is_not_renewed_by_the_fair_grant() {
    let server = Server::shared();
    let DeletedUnderAFairWaiter { client: _client, held, other_client, other, waiter } =
        delete_under_a_fair_waiter(&server, "kinds-gate-grant").await;
    other.unlock().await.unwrap();
    let fair_guard = waiter.await.unwrap().unwrap();
    assert_eq!(hold_count(&server, "kinds-gate-grant", b"me").await, 1, "the fair level alone");
    // Its level was deleted: lost by the fair grant, or by its lease's end
    // on the client's clock (2 s) at the latest; renewed by the fair level
    // it would look held for ever.
    eventually!("the plain hold, whose level was deleted, lost", held.is_lost());
    let _ = held.unlock().await;
    assert!(!fair_guard.is_lost());
    let taken = other_client.lock("kinds-gate-grant").try_lock(Duration::ZERO, None).await.unwrap();
    assert!(taken.is_none(), "another owner took the lock while the fair guard looked held");
    fair_guard.unlock().await.unwrap();
}

/// A plain hold of the owner `me` on `name`, its key deleted right after a
/// watchdog round (the next is 667 ms away, the lease ends in 2 s) and the
/// lock taken by another owner, and a fair waiter of `me` blocked on the
/// server behind it.
struct DeletedUnderAFairWaiter {
    client: Client,
    held: Guard,
    other_client: Client,
    other: Guard,
    waiter: tokio::task::JoinHandle<rlock_client::Result<Guard>>,
}

async fn delete_under_a_fair_waiter(server: &Server, name: &'static str) -> DeletedUnderAFairWaiter {
    let client = client(server).await;
    let held = client.owned_by("me").lock(name).lock().await.unwrap();
    let rounds = client.watchdog_stats().rounds;
    eventually!("a watchdog round", client.watchdog_stats().rounds > rounds);
    let _: () = redis::cmd("DEL").arg(name).query_async(&mut admin(server).await).await.unwrap();
    let other_client = self::client(server).await;
    let other = other_client.lock(name).lock().await.unwrap();
    let fair = client.owned_by("me").fair_lock(name);
    let waiter = tokio::spawn(async move { fair.lock().await });
    let blocked = || async {
        let info: String = redis::cmd("INFO").arg("clients").query_async(&mut admin(server).await).await.unwrap();
        info.contains("blocked_clients:1")
    };
    eventually!("the fair waiter blocked on the server", blocked().await);
    DeletedUnderAFairWaiter { client, held, other_client, other, waiter }
}

/// A fenced hold of the plain lock's owner id, given up on the client's
/// clock (a stall made its lease look ended) while the server still counts
/// its level, and its handle dropped: the plain lock's count was exact
/// before, and nothing of the fenced lock's made it inexact, so its next
/// acquire (`HOLDS 0`) found the fenced level and was answered as a replay:
/// the lease asked for (10 s) was not set, the level's 300 ms was the lock's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_acquire_after_another_kinds_level_given_up_gets_the_lease_it_asked_for() {
    let server = stallable_server();
    let patient = options().with_watchdog_timeout(Duration::from_secs(30)).with_reply_timeout(Duration::from_secs(5));
    let client = Client::connect(server.client(), patient).await.unwrap();
    let plain = client.owned_by("me").lock("kinds-replayed-lease");
    // A full cycle: the key is gone, and the plain lock counts its 0 exactly.
    plain.lock().await.unwrap().unlock().await.unwrap();
    {
        let fenced = client.owned_by("me").fenced_lock("kinds-replayed-lease");
        let stalled = stall(&server, 0.8).await;
        let given_up = fenced.lock_with_lease(Duration::from_millis(300)).await.unwrap();
        stalled.await.unwrap();
        tokio::time::timeout(PATIENCE, given_up.lost()).await.expect("its lease, counted from the send, ran out");
        assert_eq!(hold_count(&server, "kinds-replayed-lease", b"me").await, 1, "the server still counts the level");
    }
    let current = plain.try_lock(Duration::ZERO, Some(Duration::from_secs(10))).await.unwrap().expect("granted");
    let pttl: i64 =
        redis::cmd("PTTL").arg("kinds-replayed-lease").query_async(&mut admin(&server).await).await.unwrap();
    assert!(pttl > 5_000, "the lease asked for (10 s) is the lock's: PTTL {pttl}");
    assert!(!current.is_lost());
    current.unlock().await.unwrap();
    eventually!("no level left", hold_count(&server, "kinds-replayed-lease", b"me").await == 0);
}

/// A plain lock's acquire names the owner's count as the plain handle
/// counts it (`HOLDS n`); a fenced hold of the same name and owner is a
/// level of that count too, so a plain re-entry after it finds `n + 1` and
/// is answered as a replay: no level added. The plain unlocks then take
/// the fenced hold's level, and the lock is free while the fenced guard
/// looks held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_reentry_after_another_kinds_hold_of_the_owner_adds_a_level() {
    let server = Server::shared();
    let client = client(&server).await;
    let plain = client.owned_by("me").lock("z");
    let fenced = client.owned_by("me").fenced_lock("z");
    let first = plain.lock().await.unwrap();
    let fencing = fenced.lock().await.unwrap();
    let again = plain.lock().await.unwrap();
    assert_eq!(hold_count(&server, "z", b"me").await, 3, "the plain re-entry added no level");
    again.unlock().await.unwrap();
    first.unlock().await.unwrap();
    assert!(!fencing.is_lost());
    let other = client.lock("z").try_lock(Duration::ZERO, None).await.unwrap();
    assert!(other.is_none(), "another owner took the lock while the fenced guard holds it");
    fencing.unlock().await.unwrap();
}
