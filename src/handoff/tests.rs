use super::*;

fn waiter(client: u32) -> Waiter<u32> {
    let request = Some(Request { id: format!("request:{client}").into_bytes(), window_ms: 1000 });
    Waiter {
        client,
        client_id: u64::from(client) + 100,
        ends_at_ms: 5_000,
        owner: format!("owner:{client}").into_bytes(),
        lease_ms: 1000,
        request,
        full_reply: false,
        queued_at_ms: 0,
    }
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Push(&'static [u8], u32),
    PopFront(&'static [u8], Option<u32>),
    Remove(u32, Option<&'static [u8]>),
    PushFrontAgain(&'static [u8]),
}

/// Steps, waiters left after them, the locks they wait for.
type Case = (&'static [Op], usize, &'static [&'static [u8]]);

#[test]
fn queues_keep_arrival_order_per_lock_and_drop_leavers() {
    let cases: [Case; 5] = [
        (&[Op::Push(b"a", 1), Op::Push(b"a", 2), Op::PopFront(b"a", Some(1)), Op::PopFront(b"a", Some(2))], 0, &[]),
        (&[Op::Push(b"a", 1), Op::Push(b"b", 2), Op::PopFront(b"b", Some(2)), Op::PopFront(b"b", None)], 1, &[b"a"]),
        (&[Op::Push(b"a", 1), Op::Push(b"a", 2), Op::Push(b"a", 3), Op::Remove(2, Some(b"a"))], 2, &[b"a"]),
        (&[Op::Push(b"a", 1), Op::Remove(1, Some(b"a")), Op::Remove(1, None), Op::PopFront(b"a", None)], 0, &[]),
        (&[Op::Push(b"a", 1), Op::Push(b"a", 2), Op::PushFrontAgain(b"a"), Op::PopFront(b"a", Some(1))], 1, &[b"a"]),
    ];
    for (steps, waiting, locks) in cases {
        let mut queues = Queues::default();
        for step in steps {
            match *step {
                Op::Push(lock, client) => queues.push(lock, waiter(client)),
                Op::PopFront(lock, expected) => {
                    assert_eq!(queues.pop_front(lock).map(|w| w.client), expected, "{steps:?}")
                }
                Op::Remove(client, expected) => {
                    assert_eq!(queues.lock_of(&client).as_deref(), expected, "{steps:?}");
                    let removed = queues.remove(&client);
                    assert_eq!(removed.as_ref().map(|(lock, _)| lock.as_slice()), expected, "{steps:?}");
                    if let Some((_, removed)) = removed {
                        assert_eq!(removed, waiter(client));
                    }
                }
                Op::PushFrontAgain(lock) => {
                    let head = queues.pop_front(lock).expect("a head");
                    queues.push_front(lock, head);
                }
            }
        }
        assert_eq!(queues.waiting(), waiting, "{steps:?}");
        assert_eq!(queues.is_empty(), waiting == 0, "{steps:?}");
        assert_eq!(queues.locks(), locks.iter().map(|lock| lock.to_vec()).collect::<Vec<_>>(), "{steps:?}");
        for lock in [b"a".as_slice(), b"b"] {
            assert_eq!(queues.has_waiters(lock), locks.contains(&lock), "{steps:?}: {lock:?}");
        }
        for client in 1..=4 {
            let owner = waiter(client).owner;
            let mut waited: Vec<Vec<u8>> =
                queues.listed().into_iter().filter(|listed| listed.owner == owner).map(|listed| listed.lock).collect();
            waited.dedup();
            assert_eq!(queues.waits_of(&owner), waited, "{steps:?}: the owner index of {client}");
        }
    }
}

#[test]
fn a_resent_acquire_takes_over_its_place() {
    let queued = || {
        let mut queues = Queues::default();
        for client in [1, 2, 3] {
            queues.push(b"a", Waiter { queued_at_ms: i64::from(client), ..waiter(client) });
        }
        queues.push(b"b", Waiter { request: None, ..waiter(4) });
        queues
    };
    // Found by owner and request id on its lock; the resend gets its place
    // and keeps the time it queued.
    let mut queues = queued();
    let resend = Waiter { client: 20, lease_ms: 2000, full_reply: true, queued_at_ms: 99, ..waiter(2) };
    assert_eq!(queues.queue(b"a", resend.clone()), Some(2));
    assert_eq!(queues.waiting(), 4);
    // Another owner, another request id, another lock, or no request id:
    // queued behind the others.
    let other_owner = Waiter { owner: b"owner:1".to_vec(), ..waiter(21) };
    let other_request = Waiter { request: waiter(1).request, owner: b"owner:2".to_vec(), ..waiter(21) };
    for (lock, other) in [
        (b"a", other_owner),
        (b"a", other_request),
        (b"b", Waiter { client: 21, ..waiter(2) }),
        (b"b", Waiter { client: 21, request: None, ..waiter(4) }),
    ] {
        let mut queues = queued();
        assert_eq!(queues.queue(lock, other.clone()), None, "{other:?}");
        let last = std::iter::from_fn(|| queues.pop_front(lock)).last();
        assert_eq!(last, Some(other));
    }
    // A resend that will not wait takes the queued call out.
    assert!(queues.has_request(b"a", b"owner:3", b"request:3"));
    assert!(!queues.has_request(b"a", b"owner:3", b"request:1"));
    assert_eq!(queues.remove_request(b"a", b"owner:3", b"request:3").map(|waiter| waiter.client), Some(3));
    assert_eq!(queues.remove_request(b"a", b"owner:3", b"request:3"), None);
    queues.push(b"a", Waiter { queued_at_ms: 3, ..waiter(3) });
    let order: Vec<Waiter<u32>> = std::iter::from_fn(|| queues.pop_front(b"a")).collect();
    let expected = [
        Waiter { queued_at_ms: 1, ..waiter(1) },
        Waiter { queued_at_ms: 2, ..resend },
        Waiter { queued_at_ms: 3, ..waiter(3) },
    ];
    assert_eq!(order, expected);
}

#[test]
fn listed_waiters_tell_their_lock_owner_connection_and_times() {
    let mut queues = Queues::default();
    queues.push(b"a", Waiter { queued_at_ms: 10, ..waiter(1) });
    let listed = queues.listed();
    let expected = Listed {
        lock: b"a".to_vec(),
        kind: "lock",
        owner: b"owner:1".to_vec(),
        client_id: 101,
        since_ms: 10,
        ends_at_ms: 5_000,
    };
    assert_eq!(listed, [expected]);
}
