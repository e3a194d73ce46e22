//! Lua's numbers as Redisson's scripts meet them: how Redis 7.0 writes a
//! number a script gives `redis.call` (a double, with `%.17g`; Redis 7.2
//! and Valkey write it as the server writes any double, which the module
//! asks the server for), and how Lua 5.1's `tonumber` reads a string.

use rlock_protocol::DecimalBuffer;
use smallvec::SmallVec;

/// A number's text, inline: `%.17g` writes at most 23 bytes
/// (`-1.2345678901234568e+17`), so the usual count needs no heap string.
pub type LuaText = SmallVec<[u8; 24]>;

/// `x` as glibc's `%.17g` writes it: 17 significant digits without
/// trailing zeros, in fixed notation for exponents from -4 to 16, else as
/// `1.2345e+17`; `nan`, `inf` with their sign.
pub fn percent_17g(x: f64) -> LuaText {
    // The common case (counts, permits): an integer below 10^17 is written
    // with all its digits and no point, as `i64` writes it.
    if x.fract() == 0.0 && x.abs() < 1e17 && x != 0.0 {
        return LuaText::from_slice(rlock_protocol::decimal(x as i64, &mut DecimalBuffer::new()));
    }
    percent_17g_other(x).into_bytes().into()
}

/// [`percent_17g`] of any other number: zero, a fraction, 10^17 or more,
/// `nan`, `inf`.
fn percent_17g_other(x: f64) -> String {
    let sign = if x.is_sign_negative() { "-" } else { "" };
    if x.is_nan() {
        return format!("{sign}nan");
    }
    if x.is_infinite() {
        return format!("{sign}inf");
    }
    if x == 0.0 {
        return format!("{sign}0");
    }
    let scientific = format!("{:.16e}", x.abs());
    let Some((mantissa, exponent)) = scientific.split_once('e') else { return scientific };
    let exponent: i32 = exponent.parse().unwrap_or_default();
    if (-4..17).contains(&exponent) {
        let fixed = format!("{:.*}", (16 - exponent) as usize, x.abs());
        return format!("{sign}{}", without_trailing_zeros(&fixed));
    }
    let exponent_sign = if exponent < 0 { '-' } else { '+' };
    format!("{sign}{}e{exponent_sign}{:02}", without_trailing_zeros(mantissa), exponent.abs())
}

fn without_trailing_zeros(digits: &str) -> &str {
    if digits.contains('.') {
        digits.trim_end_matches('0').trim_end_matches('.')
    } else {
        digits
    }
}

/// Lua 5.1's `tonumber(s)` (`luaO_str2d`): C's `strtod` up to the first
/// NUL, in the C locale (leading spaces, a sign, decimal or hexadecimal
/// digits with a point and an exponent, `inf`, `infinity`, `nan`), then
/// nothing but spaces. (Lua's retry as a hexadecimal integer after an `x`
/// never reads more than `strtod` read.)
pub fn lua_tonumber(s: &[u8]) -> Option<f64> {
    let s = s.split(|&byte| byte == 0).next().unwrap_or_default();
    let start = s.iter().position(|&byte| !is_c_space(byte))?;
    let (value, used) = strtod(&s[start..])?;
    s[start + used..].iter().all(|&byte| is_c_space(byte)).then_some(value)
}

fn is_c_space(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// The number at the start of `s` (no leading space) and the bytes it
/// takes, as `strtod` reads it; `None` when it reads none.
fn strtod(s: &[u8]) -> Option<(f64, usize)> {
    let signed = usize::from(matches!(s.first(), Some(b'+' | b'-')));
    let negative = s.first() == Some(&b'-');
    let rest = &s[signed..];
    let lower = |n: usize| rest.get(..n).map(|part| part.to_ascii_lowercase());
    let (magnitude, used) = if lower(8).as_deref() == Some(b"infinity") {
        (f64::INFINITY, 8)
    } else if lower(3).as_deref() == Some(b"inf") {
        (f64::INFINITY, 3)
    } else if lower(3).as_deref() == Some(b"nan") {
        // `nan(chars)` takes the parenthesis when it closes.
        let chars = rest[3..].iter().skip(1).take_while(|byte| byte.is_ascii_alphanumeric() || **byte == b'_').count();
        let closed = rest.get(3) == Some(&b'(') && rest.get(4 + chars) == Some(&b')');
        (f64::NAN, if closed { 5 + chars } else { 3 })
    } else if let Some(hex) = hexadecimal(rest) {
        hex
    } else {
        decimal(rest)?
    };
    Some((if negative { -magnitude } else { magnitude }, signed + used))
}

/// Digits (`radix`), then a point and more digits: their count before and
/// after the point, and the bytes taken.
fn digits_with_point(s: &[u8], radix: u32) -> (usize, usize, usize) {
    let is_digit = |byte: &u8| char::from(*byte).is_digit(radix);
    let whole = s.iter().take_while(|byte| is_digit(byte)).count();
    let fraction = match s.get(whole) {
        Some(b'.') => s[whole + 1..].iter().take_while(|byte| is_digit(byte)).count(),
        _ => 0,
    };
    let point = usize::from(s.get(whole) == Some(&b'.') && whole + fraction > 0);
    (whole, fraction, whole + point + fraction)
}

/// An exponent after `used` bytes (`e` or `p`, a sign, digits): the bytes
/// it takes, 0 when there is none.
fn exponent_len(s: &[u8], marker: u8) -> usize {
    if !s.first().is_some_and(|byte| byte.eq_ignore_ascii_case(&marker)) {
        return 0;
    }
    let signed = usize::from(matches!(s.get(1), Some(b'+' | b'-')));
    let digits = s[1 + signed..].iter().take_while(|byte| byte.is_ascii_digit()).count();
    if digits == 0 {
        0
    } else {
        1 + signed + digits
    }
}

fn decimal(s: &[u8]) -> Option<(f64, usize)> {
    let (whole, fraction, mut used) = digits_with_point(s, 10);
    if whole + fraction == 0 {
        return None;
    }
    used += exponent_len(&s[used..], b'e');
    // Rust reads these digits correctly rounded, as glibc's strtod.
    let text = std::str::from_utf8(&s[..used]).ok()?;
    Some((text.parse().ok()?, used))
}

/// `0x` digits with a point and a binary exponent, rounded once to the
/// nearest double (ties to even) as glibc does.
fn hexadecimal(s: &[u8]) -> Option<(f64, usize)> {
    if !(s.first() == Some(&b'0') && matches!(s.get(1), Some(b'x' | b'X'))) {
        return None;
    }
    let (whole, fraction, used) = digits_with_point(&s[2..], 16);
    if whole + fraction == 0 {
        return None;
    }
    let digits = s[2..2 + used].iter().filter(|byte| **byte != b'.');
    // The first 15 significant digits (60 bits) and whether any bit
    // follows them (sticky): enough to round to 53 bits once.
    let (mut mantissa, mut sticky, mut kept, mut dropped) = (0u64, false, 0u32, 0i64);
    for digit in digits.map(|byte| char::from(*byte).to_digit(16).unwrap_or(0)) {
        if kept < 15 {
            // Leading zeros are no significant digits.
            if mantissa != 0 || digit != 0 {
                mantissa = mantissa << 4 | u64::from(digit);
                kept += 1;
            }
        } else {
            sticky |= digit != 0;
            dropped += 1;
        }
    }
    let mut exponent = 4 * (dropped - fraction as i64);
    let exponent_used = exponent_len(&s[2 + used..], b'p');
    if exponent_used > 0 {
        let text = std::str::from_utf8(&s[2 + used + 1..2 + used + exponent_used]).ok()?;
        exponent = exponent.saturating_add(text.parse::<i64>().unwrap_or(if text.starts_with('-') {
            i64::MIN / 2
        } else {
            i64::MAX / 2
        }));
    }
    let value = ((mantissa << 1 | u64::from(sticky)) as f64) * 2f64.powi(exponent.clamp(-1100, 1100) as i32 - 1);
    Some((value, 2 + used + exponent_used))
}

#[cfg(test)]
mod tests {
    use super::{lua_tonumber, percent_17g};

    #[test]
    fn strings_are_read_as_lua_5_1_tonumber_reads_them() {
        let cases: [(&[u8], Option<f64>); 24] = [
            (b"5", Some(5.0)),
            (b" 5 ", Some(5.0)),
            (b"\t+5\n", Some(5.0)),
            (b"-1.5", Some(-1.5)),
            (b"1.", Some(1.0)),
            (b".5", Some(0.5)),
            (b"1e2", Some(100.0)),
            (b"1E+2", Some(100.0)),
            (b"007", Some(7.0)),
            (b"0x10", Some(16.0)),
            (b"0X1.8p1", Some(3.0)),
            (b"0x.8", Some(0.5)),
            (b"7\0junk", Some(7.0)),
            (b"inf", Some(f64::INFINITY)),
            (b"-Infinity", Some(f64::NEG_INFINITY)),
            (b"1e", None),
            (b"0x", None),
            (b"0xg", None),
            (b"1x", None),
            (b".", None),
            (b"", None),
            (b"  ", None),
            (b"five", None),
            (b"3 x", None),
        ];
        for (text, number) in cases {
            assert_eq!(lua_tonumber(text), number, "{:?}", String::from_utf8_lossy(text));
        }
        assert!(lua_tonumber(b"nan").is_some_and(f64::is_nan));
        assert!(lua_tonumber(b"-NaN(x1)").is_some_and(f64::is_nan));
        assert_eq!(lua_tonumber(b"nan(x"), None, "an open parenthesis is trailing text");
        // Rounded once to 53 bits, ties to even; a digit past the first 15
        // still breaks a tie.
        assert_eq!(lua_tonumber(b"0x20000000000001"), Some(9007199254740992.0));
        assert_eq!(lua_tonumber(b"0x20000000000003"), Some(9007199254740996.0));
        assert_eq!(lua_tonumber(b"0x20000000000001.01"), Some(9007199254740994.0));
        assert_eq!(lua_tonumber(b"0x000020000000000001.01p4"), Some(9007199254740994.0 * 16.0));
    }

    #[test]
    fn doubles_are_written_as_17g_writes_them() {
        let cases: [(f64, &str); 18] = [
            (0.0, "0"),
            (5.0, "5"),
            (-42.0, "-42"),
            (2.5, "2.5"),
            (0.1, "0.10000000000000001"),
            (1.0 / 3.0, "0.33333333333333331"),
            (0.0001, "0.0001"),
            (0.00001, "1.0000000000000001e-05"),
            (9_007_199_254_740_993_i64 as f64, "9007199254740992"),
            (1e16, "10000000000000000"),
            (99_999_999_999_999_984.0, "99999999999999984"),
            (99_999_999_999_999_999_i64 as f64, "1e+17"),
            (123_456_789_012_345_678_i64 as f64, "1.2345678901234568e+17"),
            (-123_456_789_012_345_678_i64 as f64, "-1.2345678901234568e+17"),
            (i64::MAX as f64, "9.2233720368547758e+18"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
        ];
        for (x, text) in cases {
            assert_eq!(&percent_17g(x)[..], text.as_bytes(), "{x}");
        }
    }
}
