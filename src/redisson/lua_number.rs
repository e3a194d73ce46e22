//! How Redis 7.0 writes a number a script gives `redis.call`: Lua holds
//! it as a double, written with `%.17g`. (Redis 7.2 and Valkey write it as
//! the server writes any double, which the module asks the server for.)

/// `n` as `%.17g` writes it as a double: its integer digits below 10^17,
/// else 17 significant digits without trailing zeros, as `1.2345e+17`.
pub fn percent_17g(n: i64) -> String {
    let x = n as f64;
    let scientific = format!("{x:.16e}");
    let Some((mantissa, exponent)) = scientific.split_once('e') else { return scientific };
    let exponent: i32 = exponent.parse().unwrap_or_default();
    if exponent < 17 {
        // At most 17 digits: the double's integer value, exactly.
        return format!("{x:.0}");
    }
    let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
    format!("{mantissa}e+{exponent:02}")
}

#[cfg(test)]
mod tests {
    use super::percent_17g;

    #[test]
    fn integers_are_written_as_17g_writes_their_double() {
        let cases: [(i64, &str); 9] = [
            (0, "0"),
            (5, "5"),
            (-42, "-42"),
            (9_007_199_254_740_993, "9007199254740992"),
            (99_999_999_999_999_999, "1e+17"),
            (123_456_789_012_345_678, "1.2345678901234568e+17"),
            (132_463_988_267_086_672, "1.3246398826708667e+17"),
            (-123_456_789_012_345_678, "-1.2345678901234568e+17"),
            (i64::MAX, "9.2233720368547758e+18"),
        ];
        for (n, text) in cases {
            assert_eq!(percent_17g(n), text, "{n}");
        }
    }
}
