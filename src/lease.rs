//! Lease arguments: parsing and bounds.

use crate::error::LockError;

pub use rlock_protocol::MAX_LEASE_MS;

/// Parses `lease_ms`: base-10 digits only (no sign, no fraction, no
/// exponent), from 1 to [`MAX_LEASE_MS`].
pub fn parse_lease_ms(arg: &[u8]) -> Result<i64, LockError> {
    if arg.is_empty() || !arg.iter().all(u8::is_ascii_digit) {
        return Err(LockError::LeaseNotPositiveInteger);
    }
    let mut value: i64 = 0;
    for digit in arg {
        value = value
            .checked_mul(10)
            .and_then(|v| v.checked_add(i64::from(digit - b'0')))
            .ok_or(LockError::LeaseTooLong)?;
    }
    match value {
        0 => Err(LockError::LeaseNotPositiveInteger),
        v if v > MAX_LEASE_MS => Err(LockError::LeaseTooLong),
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
}
