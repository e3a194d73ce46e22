//! The watchdog's timing on paused time, against a scripted server: when
//! rounds go out, when a failed one is retried, and when a hold is
//! signalled lost. Paused time jumps to the next timer, so every instant
//! below is exact.

use super::*;
use crate::engine::holds::Renewal;
use crate::engine::kind::Kind;
use crate::engine::lock_state::LockId;
use crate::transport::timed_out;
use redis::Value;
use std::collections::VecDeque;
use tokio::sync::mpsc;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// Longer than any wait here: on paused time, a wait that ends only at
/// this has failed, at once.
const NEVER: Duration = Duration::from_secs(3600);

/// What the scripted server does with one round.
#[derive(Debug, Clone, Copy)]
enum Answer {
    /// A renewal made; a STATUS with the owner's hold.
    Held,
    /// A renewal refused; a STATUS without the owner's hold.
    NotHeld,
    /// The round fails at once (a dropped connection).
    Down,
    /// [`Answer::Held`] after this long: past the round's timeout, the
    /// round times out then.
    Slow(Duration),
}

/// A round as the scripted server saw it.
#[derive(Debug)]
struct Sent {
    /// Since the test started.
    at: Duration,
    /// Each command's verb and arguments after the name.
    commands: Vec<String>,
    timeout: Duration,
}

/// Answers rounds from a script, then with `then`; tells the test of each.
struct Scripted {
    started: Instant,
    script: VecDeque<Answer>,
    then: Answer,
    rounds: mpsc::UnboundedSender<Sent>,
}

impl RoundTrip for Scripted {
    fn send(
        &mut self,
        commands: Vec<(Vec<u8>, redis::Cmd)>,
        timeout: Duration,
    ) -> impl Future<Output = NodeReplies> + Send {
        let answer = self.script.pop_front().unwrap_or(self.then);
        let described = commands.iter().map(|(_, cmd)| describe(cmd)).collect();
        let sent = Sent { at: self.started.elapsed(), commands: described, timeout };
        let _ = self.rounds.send(sent);
        async move {
            let count = commands.len();
            let held = match answer {
                Answer::Down => return NodeReplies::failed(count, timed_out("the scripted server")),
                Answer::Slow(after) if after > timeout => {
                    tokio::time::sleep(timeout).await;
                    return NodeReplies::failed(count, timed_out("the scripted server"));
                }
                Answer::Slow(after) => {
                    tokio::time::sleep(after).await;
                    true
                }
                Answer::Held => true,
                Answer::NotHeld => false,
            };
            let replies = commands.iter().map(|(_, cmd)| Ok(reply(cmd, held))).collect();
            NodeReplies { replies, all_answered: true }
        }
    }
}

/// `RLOCK.RENEW 3000`: the verb and the arguments after the name and owner.
fn describe(cmd: &redis::Cmd) -> String {
    let args: Vec<String> = cmd
        .args_iter()
        .map(|arg| match arg {
            redis::Arg::Simple(bytes) => String::from_utf8_lossy(bytes).into_owned(),
            _ => "<cursor>".into(),
        })
        .collect();
    [&args[..1], args.get(3..).unwrap_or_default()].concat().join(" ")
}

fn reply(cmd: &redis::Cmd, held: bool) -> Value {
    let held = i64::from(held);
    match describe(cmd).starts_with("RLOCK.STATUS") {
        true => Value::Array(vec![Value::BulkString(b"hold_count".to_vec()), Value::Int(held)]),
        false => Value::Int(held),
    }
}

/// A watchdog on a scripted server, and the rounds it sent.
struct Harness {
    registry: Arc<Registry>,
    watchdog: Watchdog,
    rounds: mpsc::UnboundedReceiver<Sent>,
    close: watch::Sender<bool>,
    started: Instant,
}

impl Harness {
    fn start(timeout: Duration, retry_delay: Duration, script: &[Answer], then: Answer) -> Self {
        let started = Instant::now();
        let (rounds_tx, rounds) = mpsc::unbounded_channel();
        let server = Scripted { started, script: script.iter().copied().collect(), then, rounds: rounds_tx };
        let registry = Arc::new(Registry::default());
        let (close, closed) = watch::channel(false);
        let watchdog = Watchdog::start(registry.clone(), server, timeout, retry_delay, closed);
        Harness { registry, watchdog, rounds, close, started }
    }

    /// A hold granted now, recorded as an acquire records it; its state
    /// (kept alive) and its lost signal.
    fn hold(&self, renewal: Renewal, lease: Duration) -> (Arc<LockState>, watch::Receiver<bool>) {
        let id = LockId { name: b"orders".as_slice().into(), owner: b"u:1".as_slice().into(), kind: Kind::Plain };
        let state = self.registry.state(id, false, false);
        let now = Instant::now();
        let (ticket, lease_end) = state.update(|holds| {
            let (ticket, ended, _) = holds.granted(renewal, lease, lease, now, 1);
            ((ticket, holds.expires_at()), ended)
        });
        self.registry.note_lease_end(lease_end);
        let lost = state.lost_signal(&ticket);
        (state, lost)
    }

    /// The next `count` rounds, as they are sent (within [`NEVER`]).
    async fn next_rounds(&mut self, count: usize) -> Vec<Sent> {
        let mut rounds = Vec::with_capacity(count);
        while rounds.len() < count {
            let round = tokio::time::timeout(NEVER, self.rounds.recv()).await;
            rounds.push(round.unwrap_or_else(|_| panic!("no round after {rounds:?}")).expect("the watchdog runs"));
        }
        rounds
    }

    /// Waits for `lost` (within [`NEVER`]) and says when it fired, since
    /// the start.
    async fn lost_at(&self, mut lost: watch::Receiver<bool>) -> Duration {
        // A closed signal: its incarnation ended, lost too.
        let fired = tokio::time::timeout(NEVER, lost.wait_for(|lost| *lost)).await;
        assert!(fired.is_ok(), "never signalled lost");
        self.started.elapsed()
    }

    /// Every round sent so far (none is waiting to be).
    fn rounds_so_far(&mut self) -> Vec<Sent> {
        std::iter::from_fn(|| self.rounds.try_recv().ok()).collect()
    }
}

#[tokio::test(start_paused = true)]
async fn rounds_come_every_third_of_the_timeout_on_a_fixed_schedule_and_failed_ones_sooner() {
    use Answer::*;
    // (what it shows, retry delay, the server's answers, when rounds go out in ms)
    let cases: [(&str, u64, &[Answer], [u64; 4]); 5] = [
        ("a round every period", 100, &[], [1000, 2000, 3000, 4000]),
        ("slow rounds keep the schedule", 100, &[Slow(ms(400)), Slow(ms(900))], [1000, 2000, 3000, 4000]),
        ("a failed round is retried after the delay", 100, &[Down, Down], [1000, 1100, 1200, 2200]),
        ("the retry delay is a period at most", 5000, &[Down], [1000, 2000, 3000, 4000]),
        ("a hung server is given up on after a period", 100, &[Slow(secs(60))], [1000, 2100, 3100, 4100]),
    ];
    for (what, retry, script, expected) in cases {
        let mut harness = Harness::start(secs(3), ms(retry), script, Held);
        let (_state, _lost) = harness.hold(Renewal::Watchdog, secs(3));
        let rounds = harness.next_rounds(expected.len()).await;
        let at: Vec<u64> = rounds.iter().map(|round| round.at.as_millis() as u64).collect();
        assert_eq!(at, expected, "{what}");
        for round in &rounds {
            assert_eq!(round.commands, ["RLOCK.RENEW 3000"], "{what}");
            assert_eq!(round.timeout, secs(1), "{what}: a round is given up on when the next is due");
        }
        let _ = harness.close.send(true);
    }
}

/// What a loss case shows, the watchdog timeout, when the hold is granted,
/// its renewal and lease, the server's answers, when it is lost and the
/// rounds sent by then (ms throughout).
type LossCase<'a> = (&'a str, u64, u64, Renewal, u64, &'a [Answer], u64, &'a [&'a str]);

#[tokio::test(start_paused = true)]
async fn a_hold_is_signalled_lost_when_the_server_says_so_or_its_lease_ends_by_the_clients_count() {
    use Answer::*;
    let cases: [LossCase<'_>; 7] = [
        ("a renewal refused", 3000, 0, Renewal::Watchdog, 3000, &[NotHeld], 1000, &["RLOCK.RENEW 3000"]),
        ("renewals failing until the lease ends", 3000, 0, Renewal::Watchdog, 3000, &[Down; 100], 3000, &[]),
        ("renewals hung past the lease", 3000, 0, Renewal::Watchdog, 3000, &[Slow(secs(60)); 10], 3100, &[]),
        ("a fixed lease shorter than a period", 30_000, 0, Renewal::Fixed, 50, &[], 50, &[]),
        ("one granted while the watchdog sleeps", 30_000, 5000, Renewal::Fixed, 50, &[], 5050, &[]),
        ("a check that finds it gone", 30_000, 0, Renewal::Fixed, 25_000, &[NotHeld], 10_000, &["RLOCK.STATUS"]),
        ("a fixed lease checked, then ended", 30_000, 0, Renewal::Fixed, 15_000, &[], 15_000, &["RLOCK.STATUS"]),
    ];
    for (what, timeout, granted_at, renewal, lease, script, lost_at, commands) in cases {
        let mut harness = Harness::start(ms(timeout), ms(100), script, Held);
        tokio::time::sleep(ms(granted_at)).await;
        let (_state, lost) = harness.hold(renewal, ms(lease));
        assert_eq!(harness.lost_at(lost).await, ms(lost_at), "{what}");
        assert_eq!(harness.watchdog.stats().lost, 1, "{what}");
        let sent = harness.rounds_so_far();
        if !commands.is_empty() {
            let sent: Vec<&str> = sent.iter().flat_map(|round| round.commands.iter().map(String::as_str)).collect();
            assert_eq!(sent, commands, "{what}");
        }
        // Nothing held, nothing to send: a minute on, still no round.
        tokio::time::sleep(secs(60)).await;
        assert!(harness.rounds_so_far().is_empty(), "{what}: a round after the loss");
        let _ = harness.close.send(true);
    }
}

#[tokio::test(start_paused = true)]
async fn closing_the_client_stops_the_rounds_and_loses_the_holds() {
    let mut harness = Harness::start(secs(3), ms(100), &[], Answer::Held);
    let (_state, lost) = harness.hold(Renewal::Watchdog, secs(3));
    harness.next_rounds(1).await;
    tokio::time::sleep(ms(500)).await;
    harness.close.send(true).unwrap();
    assert_eq!(harness.lost_at(lost).await, ms(1500));
    assert!(harness.registry.is_stopped());
    // The watchdog would have sent its next round at 2 s.
    tokio::time::sleep(secs(60)).await;
    assert!(harness.rounds_so_far().is_empty(), "a round after the close");
    assert_eq!(harness.watchdog.stats().rounds, 1);
}
