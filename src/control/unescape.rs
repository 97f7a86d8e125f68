//! Exact `%output` data escaping: tmux writes every byte below 0x20 and the
//! backslash as `\ooo` (three octal digits) and every other byte raw, so the
//! decoded data is bytes, never text.

use bytes::Bytes;
use memchr::memchr;

/// Length of one escape: a backslash and three octal digits.
const ESCAPE_LEN: usize = 4;

/// Decodes tmux `%output` data into the exact bytes the pane's program wrote.
///
/// Returns the bytes and how many malformed escapes were seen. A malformed
/// escape (a backslash not followed by three octal digits worth at most
/// `\377`) is kept literally, so nothing is lost. Literal runs between
/// backslashes are copied whole (found with `memchr`), never byte by byte.
pub fn unescape(src: &[u8]) -> (Bytes, usize) {
    let Some(first) = memchr(b'\\', src) else {
        return (Bytes::copy_from_slice(src), 0);
    };
    let mut out = Vec::with_capacity(src.len());
    let mut malformed = 0;
    // `run` is where the literal bytes not yet copied start; `at` a backslash.
    let mut run = 0;
    let mut at = first;
    loop {
        let next = match octal_byte(src.get(at + 1..at + ESCAPE_LEN)) {
            Some(byte) => {
                out.extend_from_slice(&src[run..at]);
                out.push(byte);
                run = at + ESCAPE_LEN;
                run
            }
            None => {
                // Left in the literal run, so it is copied as it came.
                malformed += 1;
                at + 1
            }
        };
        // Escapes often come in pairs (`\015\012`): check the next byte
        // before paying for a memchr call.
        if src.get(next) == Some(&b'\\') {
            at = next;
            continue;
        }
        match src.get(next..).and_then(|rest| memchr(b'\\', rest)) {
            Some(offset) => at = next + offset,
            None => break,
        }
    }
    out.extend_from_slice(&src[run..]);
    (Bytes::from(out), malformed)
}

/// The byte of three octal digits `0`–`377`, or `None`.
fn octal_byte(digits: Option<&[u8]>) -> Option<u8> {
    let &[a, b, c] = digits? else {
        return None;
    };
    let octal = |d: u8| (b'0'..=b'7').contains(&d).then(|| d - b'0');
    if !(b'0'..=b'3').contains(&a) {
        return None;
    }
    Some(octal(a)? << 6 | octal(b)? << 3 | octal(c)?)
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
    fn escape_matches_tmux() {
        assert_eq!(escape(b"a\r\n\\\x7f\xff"), b"a\\015\\012\\134\x7f\xff");
    }

    proptest! {
        #[test]
        fn unescape_inverts_escape(data in proptest::collection::vec(any::<u8>(), 0..512)) {
            let (decoded, bad) = unescape(&escape(&data));
            prop_assert_eq!(&decoded[..], &data[..]);
            prop_assert_eq!(bad, 0);
        }

    }
}
