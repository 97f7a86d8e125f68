//! The decoded events (and so every pane's bytes) are the same however the
//! input is cut into chunks. The first two bytes choose the chunk sizes.
#![no_main]

use clawmux::control::{Decoder, Event};
use libfuzzer_sys::fuzz_target;

fn decode(chunks: impl Iterator<Item = Vec<u8>>) -> Vec<Event> {
    let mut decoder = Decoder::new();
    let mut events = Vec::new();
    for chunk in chunks {
        decoder.feed(&chunk, &mut |e| events.push(e));
    }
    decoder.finish(&mut |e| events.push(e));
    events
}

fuzz_target!(|data: &[u8]| {
    let [a, b, stream @ ..] = data else {
        return;
    };
    let sizes = [usize::from(*a).max(1), usize::from(*b).max(1)];
    let whole = decode(std::iter::once(stream.to_vec()));
    let mut rest = stream;
    let mut turn = 0;
    let chunked = decode(std::iter::from_fn(|| {
        if rest.is_empty() {
            return None;
        }
        let (head, tail) = rest.split_at(sizes[turn % 2].min(rest.len()));
        rest = tail;
        turn += 1;
        Some(head.to_vec())
    }));
    assert_eq!(whole, chunked);
    let bytewise = decode(stream.iter().map(|b| vec![*b]));
    assert_eq!(whole, bytewise);
});
