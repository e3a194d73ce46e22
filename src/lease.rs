//! Lease and latch times: parsing, bounds and expiry arithmetic.

use crate::error::LockError;

pub use rlock_protocol::MAX_LEASE_MS;

/// Parses `lease_ms`: base-10 digits only (no sign, no fraction, no
/// exponent), from 1 to [`MAX_LEASE_MS`].
pub fn parse_lease_ms(arg: &[u8]) -> Result<i64, LockError> {
    parse_ms(arg)
        .map_err(|too_long| if too_long { LockError::LeaseTooLong } else { LockError::LeaseNotPositiveInteger })
}

/// Parses `PX latch_ms` by the same rules as `lease_ms`.
pub fn parse_latch_ms(arg: &[u8]) -> Result<i64, LockError> {
    parse_ms(arg)
        .map_err(|too_long| if too_long { LockError::LatchTooLong } else { LockError::LatchNotPositiveInteger })
}

/// Parses `WAIT wait_ms` by the same rules as `lease_ms`.
/// A fair waiter's `BLOCK block_ms`, bounded as a lease.
pub fn parse_block_ms(arg: &[u8]) -> Result<i64, LockError> {
    parse_ms(arg).map_err(|_| LockError::BlockInvalid)
}

pub fn parse_wait_ms(arg: &[u8]) -> Result<i64, LockError> {
    parse_ms(arg).map_err(|too_long| if too_long { LockError::WaitTooLong } else { LockError::WaitNotPositiveInteger })
}

/// Parses `PX ttl_ms` (a semaphore's time to live) by the same rules as `lease_ms`.
pub fn parse_ttl_ms(arg: &[u8]) -> Result<i64, LockError> {
    parse_ms(arg).map_err(|too_long| if too_long { LockError::TtlTooLong } else { LockError::TtlNotPositiveInteger })
}

/// True when `arg` is all base-10 digits: a time, not a keyword.
pub fn is_digits(arg: &[u8]) -> bool {
    !arg.is_empty() && arg.iter().all(u8::is_ascii_digit)
}

/// The absolute expiry `ttl_ms` from `now_ms`, refusing what does not fit.
pub fn expiry(now_ms: i64, ttl_ms: i64) -> Result<i64, LockError> {
    now_ms.checked_add(ttl_ms).ok_or(LockError::ExpiryOverflow)
}

/// A time from 1 to [`MAX_LEASE_MS`]; the error is `true` when the digits
/// are fine but the value is too large.
fn parse_ms(arg: &[u8]) -> Result<i64, bool> {
    if !is_digits(arg) {
        return Err(false);
    }
    let value = arg
        .iter()
        .try_fold(0i64, |value, digit| value.checked_mul(10)?.checked_add(i64::from(digit - b'0')))
        .ok_or(true)?;
    match value {
        0 => Err(false),
        v if v > MAX_LEASE_MS => Err(true),
        v => Ok(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_leases_by_the_table() {
        let cases: &[(&[u8], Result<i64, LockError>)] = &[
            (b"1", Ok(1)),
            (b"30000", Ok(30_000)),
            (b"007", Ok(7)),
            (b"31536000000", Ok(MAX_LEASE_MS)),
            (b"31536000001", Err(LockError::LeaseTooLong)),
            (b"99999999999999999999999", Err(LockError::LeaseTooLong)),
            (b"0", Err(LockError::LeaseNotPositiveInteger)),
            (b"000", Err(LockError::LeaseNotPositiveInteger)),
            (b"", Err(LockError::LeaseNotPositiveInteger)),
            (b"-5", Err(LockError::LeaseNotPositiveInteger)),
            (b"+5", Err(LockError::LeaseNotPositiveInteger)),
            (b"1.5", Err(LockError::LeaseNotPositiveInteger)),
            (b"1e3", Err(LockError::LeaseNotPositiveInteger)),
            (b" 5", Err(LockError::LeaseNotPositiveInteger)),
            (b"5\n", Err(LockError::LeaseNotPositiveInteger)),
            (b"abc", Err(LockError::LeaseNotPositiveInteger)),
            (b"\xff", Err(LockError::LeaseNotPositiveInteger)),
        ];
        for (input, expected) in cases {
            assert_eq!(parse_lease_ms(input), *expected, "input {:?}", String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn wait_times_parse_like_leases_with_their_own_errors() {
        assert_eq!(parse_block_ms(b"250"), Ok(250));
        assert_eq!(parse_block_ms(b"0"), Err(LockError::BlockInvalid));
        assert_eq!(parse_block_ms(b"31536000001"), Err(LockError::BlockInvalid));
        assert_eq!(parse_wait_ms(b"5000"), Ok(5_000));
        assert_eq!(parse_wait_ms(b"0"), Err(LockError::WaitNotPositiveInteger));
        assert_eq!(parse_wait_ms(b"x"), Err(LockError::WaitNotPositiveInteger));
        assert_eq!(parse_wait_ms(b"31536000001"), Err(LockError::WaitTooLong));
    }

    #[test]
    fn ttl_times_parse_like_leases_with_their_own_errors() {
        assert_eq!(parse_ttl_ms(b"60000"), Ok(60_000));
        assert_eq!(parse_ttl_ms(b"0"), Err(LockError::TtlNotPositiveInteger));
        assert_eq!(parse_ttl_ms(b"-5"), Err(LockError::TtlNotPositiveInteger));
        assert_eq!(parse_ttl_ms(b"31536000001"), Err(LockError::TtlTooLong));
    }

    #[test]
    fn latch_times_parse_like_leases_with_their_own_errors() {
        assert_eq!(parse_latch_ms(b"20000"), Ok(20_000));
        assert_eq!(parse_latch_ms(b"0"), Err(LockError::LatchNotPositiveInteger));
        assert_eq!(parse_latch_ms(b"-1"), Err(LockError::LatchNotPositiveInteger));
        assert_eq!(parse_latch_ms(b"ID"), Err(LockError::LatchNotPositiveInteger));
        assert_eq!(parse_latch_ms(b"31536000001"), Err(LockError::LatchTooLong));
        assert_eq!(parse_latch_ms(b"99999999999999999999999"), Err(LockError::LatchTooLong));
    }

    #[test]
    fn expiries_never_overflow() {
        assert_eq!(expiry(1_000, 30_000), Ok(31_000));
        assert_eq!(expiry(i64::MAX - MAX_LEASE_MS, MAX_LEASE_MS), Ok(i64::MAX));
        assert_eq!(expiry(i64::MAX - MAX_LEASE_MS + 1, MAX_LEASE_MS), Err(LockError::ExpiryOverflow));
        assert_eq!(expiry(1_700_000_000_000, i64::MAX), Err(LockError::ExpiryOverflow));
    }
}
