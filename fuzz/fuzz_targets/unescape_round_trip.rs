//! `unescape(escape(x)) == x` for any bytes, and `unescape` never panics.
#![no_main]

use clawmux::control::{escape, unescape};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (decoded, malformed) = unescape(&escape(data));
    assert_eq!(&decoded[..], data);
    assert_eq!(malformed, 0);
    let _ = unescape(data);
});
