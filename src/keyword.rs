//! Command keywords (`VIA`, `ID`, `read-write`…), matched in any case.

/// `arg` is `keyword` in any case. A byte with its case bit set matches a
/// letter's only when it is that letter in either case, so letters need
/// no case mapping per byte; any other byte must be the same.
pub fn matches_keyword(arg: &[u8], keyword: &[u8]) -> bool {
    const CASE_BIT: u8 = 0x20;
    arg.len() == keyword.len()
        && arg.iter().zip(keyword).all(|(&a, &k)| a == k || (k.is_ascii_alphabetic() && a | CASE_BIT == k | CASE_BIT))
}

#[cfg(test)]
mod tests {
    use super::matches_keyword;

    #[test]
    fn keywords_match_in_any_case_and_nothing_else() {
        let table: [(&[u8], &[u8], bool); 12] = [
            (b"CHANNEL", b"CHANNEL", true),
            (b"channel", b"CHANNEL", true),
            (b"ChAnNeL", b"CHANNEL", true),
            (b"CHANNE", b"CHANNEL", false),
            (b"CHANNELS", b"CHANNEL", false),
            (b"", b"CHANNEL", false),
            (b"CH@NNEL", b"CHANNEL", false),
            (b"READ-WRITE", b"read-write", true),
            (b"read\rwrite", b"read-write", false),
            (b"read\x0dwrite", b"read-write", false),
            (b"permit\rsemaphore", b"permit-semaphore", false),
            (b"Permit-Semaphore", b"permit-semaphore", true),
        ];
        for (arg, keyword, expected) in table {
            assert_eq!(matches_keyword(arg, keyword), expected, "{arg:?} against {keyword:?}");
        }
        // Every byte against every byte: the same as a case mapping.
        for byte in 0..=u8::MAX {
            for other in 0..=u8::MAX {
                assert_eq!(matches_keyword(&[byte], &[other]), [byte].eq_ignore_ascii_case(&[other]), "{byte} {other}");
            }
        }
    }
}
