//! The checks of a step: the replies, by the commands' rules where they
//! differ from Redisson's, and the twins' states.

use super::{Op, Twin};
use redis::Value;

/// The clock the scripts were given, and how far the twins' clock-derived
/// values may be apart (the commands read the clock later).
pub struct Clock {
    pub now: i64,
    pub tolerance_ms: i64,
}

impl Clock {
    fn close(&self, a: i64, b: i64) -> bool {
        a == b || (a > 0 && b > 0 && (a - b).abs() <= self.tolerance_ms)
    }
}

/// An integer reply, or a count as a bulk string (availablePermits' GET).
fn number(value: &Value) -> i64 {
    match value {
        Value::Int(n) => *n,
        other => redis::from_redis_value::<String>(other.clone()).unwrap().parse().unwrap(),
    }
}

/// Counts of the cases a random run must reach.
#[derive(Debug, Default)]
pub struct Seen {
    pub acquired: usize,
    pub hints: usize,
    pub released: usize,
    pub lapsed: usize,
    pub released_all: usize,
    pub updated: usize,
    pub kept_ttl: usize,
    /// Steps leaving a negative count (where a reclaim publishes nothing).
    pub negative: usize,
}

/// Checks one step's replies (`script`, `command`); `before` is the
/// commands twin's state before the step.
pub fn check_replies(
    op: &Op,
    script: &Value,
    command: &Value,
    before: &Twin,
    clock: &Clock,
    seen: &mut Seen,
    context: &str,
) {
    match op {
        Op::TryAcquire(..) => match (script, command) {
            (Value::Nil, Value::Nil) => {}
            (s, c) => {
                let (s, c): (String, String) =
                    (redis::from_redis_value(s.clone()).unwrap(), redis::from_redis_value(c.clone()).unwrap());
                if c == "OK" {
                    assert_eq!(s, c, "{context}: reply");
                    seen.acquired += 1;
                } else {
                    let at = |hint: &str| hint.strip_prefix(':').and_then(|ms| ms.parse::<i64>().ok());
                    let (s_at, c_at) = (at(&s).unwrap(), at(&c).unwrap_or_else(|| panic!("{context}: {c}")));
                    assert!(clock.close(s_at, c_at), "{context}: hint {s} vs {c}");
                    seen.hints += 1;
                }
            }
        },
        Op::Release(id) => {
            let (s, c) = (number(script), number(command));
            if c == -1 {
                assert_eq!(s, 0, "{context}: Redisson says 0 for a lapsed lease");
                let at = before.permits.get(id).copied();
                assert!(at.is_some_and(|at| at <= clock.now), "{context}: -1 for a permit expiring at {at:?}");
                seen.lapsed += 1;
            } else {
                assert_eq!(s, c, "{context}: reply");
                seen.released += usize::from(c == 1);
            }
        }
        Op::Lease(_) => {
            let (s, c) = (number(script), number(command));
            assert!(clock.close(s, c), "{context}: lease {s} vs {c}");
        }
        Op::Available | Op::Permits | Op::Acquired => assert_eq!(number(script), number(command), "{context}"),
        _ => {
            assert_eq!(script, command, "{context}: reply");
            seen.released_all += usize::from(matches!(op, Op::ReleaseAll(_)) && *command != Value::Int(0));
            seen.updated += usize::from(matches!(op, Op::UpdateLease(..)) && *command == Value::Int(1));
        }
    }
}

pub fn check_state(scripts: &Twin, commands: &Twin, clock: &Clock, context: &str) {
    assert_eq!(scripts.count, commands.count, "{context}: count");
    assert!(clock.close(scripts.count_at, commands.count_at), "{context}: count expiry {scripts:?} vs {commands:?}");
    assert!(
        clock.close(scripts.permits_at, commands.permits_at),
        "{context}: permits' expiry {scripts:?} vs {commands:?}"
    );
    let mut ids: Vec<&Vec<u8>> = scripts.permits.keys().collect();
    ids.sort();
    let mut command_ids: Vec<&Vec<u8>> = commands.permits.keys().collect();
    command_ids.sort();
    assert_eq!(ids, command_ids, "{context}: permits");
    for id in ids {
        let (s, c) = (scripts.permits[id], commands.permits[id]);
        assert!(clock.close(s, c), "{context}: expiry of {id:?}: {s} vs {c}");
    }
}
