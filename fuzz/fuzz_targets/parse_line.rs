//! `parse_line` never panics, and pane data never grows in decoding.
#![no_main]

use clawmux::control::{Notification, parse_line};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|line: &[u8]| {
    match parse_line(line) {
        Ok(Notification::Output { data, .. } | Notification::ExtendedOutput { data, .. }) => {
            assert!(data.len() <= line.len());
        }
        Ok(_) | Err(_) => {}
    }
});
