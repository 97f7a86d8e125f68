//! Exact `%output` data escaping: tmux writes every byte below 0x20 and the
//! backslash as `\ooo` (three octal digits) and every other byte raw, so the
//! decoded data is bytes, never text.

use bytes::Bytes;
use memchr::memchr;

/// Length of one escape: a backslash and three octal digits.
const ESCAPE_LEN: usize = 4;
/// Bytes scanned as one machine word when looking for the next backslash.
const WORD: usize = 8;
/// Words scanned inline before handing a long literal run to `memchr`:
/// runs between escapes are short in terminal output (`\015\012` every
/// line, `\033` every colour change), where a `memchr` call costs more than
/// the scan; long runs go to `memchr`'s SIMD loop.
const INLINE_WORDS: usize = 2;

/// Decodes tmux `%output` data into the exact bytes the pane's program wrote.
///
/// Returns the bytes and how many malformed escapes were seen. A malformed
/// escape (a backslash not followed by three octal digits worth at most
/// `\377`) is kept literally, so nothing is lost. Literal runs are copied
/// whole, a word or a `memchr` span at a time, never byte by byte.
pub fn unescape(src: &[u8]) -> (Bytes, usize) {
    let Some(first) = memchr(b'\\', src) else {
        return (Bytes::copy_from_slice(src), 0);
    };
    // Decoding only shrinks; the slack lets a whole word be copied at the end.
    let mut out = vec![0u8; src.len() + WORD];
    out[..first].copy_from_slice(&src[..first]);
    let (mut read, mut write, mut malformed) = (first, first, 0);
    // Invariant at the top of the loop: `src[read]` is a backslash.
    'escapes: loop {
        match src.get(read..read + ESCAPE_LEN).and_then(escaped_byte) {
            Some(byte) => {
                out[write] = byte;
                read += ESCAPE_LEN;
            }
            None => {
                out[write] = b'\\';
                read += 1;
                malformed += 1;
            }
        }
        write += 1;
        // Short literal run: copy a word, advance to its first backslash.
        for _ in 0..INLINE_WORDS {
            let Some(word) = src
                .get(read..read + WORD)
                .and_then(|w| <[u8; WORD]>::try_from(w).ok())
            else {
                break;
            };
            out[write..write + WORD].copy_from_slice(&word);
            let run = backslash_index(word);
            read += run;
            write += run;
            if run < WORD {
                continue 'escapes;
            }
        }
        // Long run (or the tail): memchr.
        let rest = &src[read..];
        let run = memchr(b'\\', rest).unwrap_or(rest.len());
        out[write..write + run].copy_from_slice(&rest[..run]);
        read += run;
        write += run;
        if read == src.len() {
            break;
        }
    }
    out.truncate(write);
    (Bytes::from(out), malformed)
}

/// The byte of an escape `\ooo` (`\000`–`\377`), checked in one word.
fn escaped_byte(escape: &[u8]) -> Option<u8> {
    let word = u32::from_le_bytes(escape.try_into().ok()?);
    // Byte 0 is the backslash; digit 1 is `0`-`3`, digits 2 and 3 `0`-`7`.
    if word & 0xF8F8_FC00 != 0x3030_3000 {
        return None;
    }
    let [_, high, mid, low] = word.to_le_bytes();
    Some((high & 3) << 6 | (mid & 7) << 3 | (low & 7))
}

/// Index of the first backslash in an 8-byte word, or 8 if none: the
/// classic zero-byte test on `word ^ 0x5c5c…` (exact for the lowest match).
fn backslash_index(word: [u8; WORD]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let x = u64::from_le_bytes(word) ^ (ONES * u64::from(b'\\'));
    let zero_bytes = x.wrapping_sub(ONES) & !x & HIGHS;
    (zero_bytes.trailing_zeros() / 8) as usize
}

/// Escapes bytes the way tmux does for `%output` (the inverse of [`unescape()`]).
pub fn escape(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len());
    for &byte in data {
        if byte < 0x20 || byte == b'\\' {
            out.extend_from_slice(&[
                b'\\',
                b'0' + (byte >> 6),
                b'0' + ((byte >> 3) & 7),
                b'0' + (byte & 7),
            ]);
        } else {
            out.push(byte);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn decodes_escapes_and_passes_high_bytes_raw() {
        let (data, bad) = unescape(b"tab\\011bell\\007 \xc3\xa9 back\\134 end\\015\\012");
        assert_eq!(&data[..], b"tab\tbell\x07 \xc3\xa9 back\\ end\r\n");
        assert_eq!(bad, 0);
    }

    #[test]
    fn malformed_escapes_are_kept_literally_and_counted() {
        for (input, want, count) in [
            (&b"a\\"[..], &b"a\\"[..], 1),
            (b"a\\01", b"a\\01", 1),
            (b"\\08x", b"\\08x", 1),
            (b"\\400", b"\\400", 1),
            (b"\\\\134", b"\\\\", 1),
            (b"\\x\\101", b"\\xA", 1),
        ] {
            let (data, bad) = unescape(input);
            assert_eq!(&data[..], want, "{:?}", String::from_utf8_lossy(input));
            assert_eq!(bad, count, "{:?}", String::from_utf8_lossy(input));
        }
    }

    #[test]
    fn finds_the_first_backslash_in_a_word() {
        assert_eq!(backslash_index(*b"abcdefgh"), 8);
        assert_eq!(backslash_index(*b"\\bcdefgh"), 0);
        assert_eq!(backslash_index(*b"abc\\\\f\\h"), 3);
        // 0x5d right after the match borrows into a false hit above it only.
        assert_eq!(backslash_index(*b"\xff\x5b\\\x5d\x00\x00\x00\x5c"), 2);
        assert_eq!(backslash_index(*b"\x5d\x5d\x5d\x5d\x5d\x5d\x5d\x5c"), 7);
    }

    #[test]
    fn escape_matches_tmux() {
        assert_eq!(escape(b"a\r\n\\\x7f\xff"), b"a\\015\\012\\134\x7f\xff");
    }

    /// The obvious byte-at-a-time decoder, to check the fast one against.
    fn reference(src: &[u8]) -> (Vec<u8>, usize) {
        let (mut out, mut bad, mut i) = (Vec::new(), 0, 0);
        while i < src.len() {
            if src[i] == b'\\' {
                match src.get(i + 1..i + 4) {
                    Some([a @ b'0'..=b'3', b @ b'0'..=b'7', c @ b'0'..=b'7']) => {
                        out.push((a - b'0') * 64 + (b - b'0') * 8 + (c - b'0'));
                        i += 4;
                        continue;
                    }
                    _ => bad += 1,
                }
            }
            out.push(src[i]);
            i += 1;
        }
        (out, bad)
    }

    proptest! {
        #[test]
        fn unescape_matches_the_reference_on_any_input(
            raw in proptest::collection::vec(
                prop_oneof![Just(b'\\'), b'0'..=b'9', any::<u8>()], 0..300)
        ) {
            let (fast, bad) = unescape(&raw);
            let (want, want_bad) = reference(&raw);
            prop_assert_eq!(&fast[..], &want[..]);
            prop_assert_eq!(bad, want_bad);
        }

        #[test]
        fn unescape_inverts_escape(data in proptest::collection::vec(any::<u8>(), 0..512)) {
            let (decoded, bad) = unescape(&escape(&data));
            prop_assert_eq!(&decoded[..], &data[..]);
            prop_assert_eq!(bad, 0);
        }

    }
}
