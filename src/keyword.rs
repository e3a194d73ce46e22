//! Command keywords (`VIA`, `ID`, `PX`…), matched in any case.

/// `arg` is `keyword` (letters only, as every keyword) in any case: a byte
/// with its case bit set matches a letter's only when it is that letter,
/// so the comparison needs no case mapping per byte.
pub fn matches_keyword(arg: &[u8], keyword: &[u8]) -> bool {
    debug_assert!(keyword.iter().all(u8::is_ascii_alphabetic), "a keyword of letters");
    const CASE_BIT: u8 = 0x20;
    arg.len() == keyword.len() && arg.iter().zip(keyword).all(|(a, k)| a | CASE_BIT == k | CASE_BIT)
}

#[cfg(test)]
mod tests {
    use super::matches_keyword;

    #[test]
    fn keywords_match_in_any_case_and_nothing_else() {
        let table: [(&[u8], bool); 12] = [
            (b"CHANNEL", true),
            (b"channel", true),
            (b"ChAnNeL", true),
            (b"CHANNE", false),
            (b"CHANNELS", false),
            (b"", false),
            (b"CHANNEl\0", false),
            (b"chann\x01l", false),
            (b"CH@NNEL", false),
            (b"CHANN\x05L", false),
            (b"\xc3HANNEL", false),
            (b"CHANNEM", false),
        ];
        for (arg, expected) in table {
            assert_eq!(matches_keyword(arg, b"CHANNEL"), expected, "{arg:?}");
            assert_eq!(matches_keyword(arg, b"CHANNEL"), arg.eq_ignore_ascii_case(b"CHANNEL"), "{arg:?}");
        }
        // Every byte against every letter: the same as a case mapping.
        for byte in 0..=u8::MAX {
            for letter in (b'A'..=b'Z').chain(b'a'..=b'z') {
                assert_eq!(
                    matches_keyword(&[byte], &[letter]),
                    [byte].eq_ignore_ascii_case(&[letter]),
                    "{byte} {letter}"
                );
            }
        }
    }
}
