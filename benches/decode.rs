//! Decode throughput: `control::Decoder` (framing, parsing, exact unescape,
//! block assembly) against a naive decoder (each line to a `String`, then a
//! regex replacing `\\[0-7]{3}`), measured in the same run; prints the ratio.
//!
//! The input is a realistic control-mode stream: the real tmux 3.3a
//! recording plus a synthetic Claude Code session (spinner redraws, coloured
//! markdown with UTF-8, tool output, reply blocks) cut into `%output` lines
//! the way tmux cuts them.

use std::hint::black_box;
use std::time::{Duration, Instant};

use clawmux::control::{Decoder, Event, Notification, escape};
use criterion::{Criterion, Throughput, criterion_group};

const FIXTURE: &[u8] = include_bytes!("../tests/fixtures/tmux-3.3a-basic.ctl");
/// Size of the synthetic input: large enough to leave the CPU caches.
const TARGET_BYTES: usize = 8 << 20;
/// Raw pane bytes per `%output` line; tmux writes at most 8 KiB and usually
/// far less for an interactive program.
const OUTPUT_CHUNK: usize = 1024;

/// One screenful of what Claude Code writes while it works.
fn agent_screen(turn: usize) -> Vec<u8> {
    let mut s = Vec::new();
    for tick in 0..8 {
        s.extend_from_slice(
            format!(
                "\x1b[2K\x1b[1G\x1b[38;5;174m✶\x1b[39m Transfiguring… \x1b[2m({}m {}s · ↓ {}.{}k tokens · esc to interrupt)\x1b[22m\r",
                turn % 60, tick * 7 % 60, turn % 90, tick
            )
            .as_bytes(),
        );
    }
    s.extend_from_slice(b"\r\n\x1b[1m## Plan\x1b[22m\r\n");
    for line in 0..24 {
        s.extend_from_slice(
            format!(
                "  \x1b[32m⏺\x1b[39m Step {line}: update `src/control/decoder.rs` so the framer keeps partial lines — déjà vu, 中文, naïve café ✓\r\n"
            )
            .as_bytes(),
        );
    }
    s.extend_from_slice(b"\x1b[90m\xe2\x94\x80\xe2\x94\x80\xe2\x94\x80 cargo test \xe2\x94\x80\xe2\x94\x80\xe2\x94\x80\x1b[39m\r\n");
    for t in 0..16 {
        s.extend_from_slice(
            format!("test control::tests::case_{t} ... \x1b[32mok\x1b[39m\r\n").as_bytes(),
        );
    }
    s.extend_from_slice(b"\t\\ back\\slash \x07\r\n\xe2\x9d\xaf \r\n");
    s
}

/// The benchmark input: the real recording, then agent turns cut into
/// `%output` lines, with a reply block and a layout change between turns.
fn realistic_stream() -> Vec<u8> {
    let mut out = FIXTURE.to_vec();
    let mut turn = 0;
    while out.len() < TARGET_BYTES {
        let screen = agent_screen(turn);
        for chunk in screen.chunks(OUTPUT_CHUNK) {
            out.extend_from_slice(format!("%output %{} ", turn % 3).as_bytes());
            out.extend_from_slice(&escape(chunk));
            out.push(b'\n');
        }
        out.extend_from_slice(
            format!("%begin 1795964420 {turn} 1\n%0 {turn} bash\n%1 {turn} claude\n%end 1795964420 {turn} 1\n%layout-change @0 aafd,120x40,0,0,0 aafd,120x40,0,0,0 *\n")
                .as_bytes(),
        );
        turn += 1;
    }
    out
}

/// clawmux: the whole sans-IO pipeline; counts pane bytes like a consumer.
fn decode_fast(input: &[u8]) -> usize {
    let mut decoder = Decoder::new();
    let mut total = 0;
    decoder.feed(input, &mut |event| {
        if let Event::Notification(Notification::Output { data, .. }) = event {
            total += data.len();
        }
    });
    decoder.finish(&mut |_| {});
    total
}

/// The baseline: line -> `String` -> regex replace of `\\[0-7]{3}`.
struct Naive {
    escape: regex::Regex,
}

impl Naive {
    fn new() -> Self {
        Naive {
            escape: regex::Regex::new(r"\\[0-7]{3}").expect("a valid regex"),
        }
    }

    fn decode(&self, input: &[u8]) -> usize {
        let text = String::from_utf8_lossy(input);
        let mut total = 0;
        let mut in_block = false;
        for line in text.lines() {
            if line.starts_with("%begin ") {
                in_block = true;
            } else if line.starts_with("%end ") || line.starts_with("%error ") {
                in_block = false;
            } else if !in_block && line.starts_with("%output ") {
                let data = line.splitn(3, ' ').nth(2).unwrap_or("");
                let decoded = self.escape.replace_all(data, |c: &regex::Captures<'_>| {
                    let byte = u8::from_str_radix(&c[0][1..], 8).unwrap_or(b'?');
                    char::from(byte).to_string()
                });
                total += decoded.len();
            }
        }
        total
    }
}

fn benches(c: &mut Criterion) {
    let input = realistic_stream();
    let naive = Naive::new();
    let mut group = c.benchmark_group("decode");
    group.throughput(Throughput::Bytes(input.len() as u64));
    group.bench_function("clawmux", |b| b.iter(|| decode_fast(black_box(&input))));
    group.bench_function("naive_string_regex", |b| {
        b.iter(|| naive.decode(black_box(&input)))
    });
    group.finish();
}

criterion_group!(decode, benches);

/// This thread's CPU time in seconds: unlike wall time, not inflated when
/// other processes share the cores.
fn thread_cpu_seconds() -> f64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime only writes the timespec we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    now.tv_sec as f64 + now.tv_nsec as f64 * 1e-9
}

/// Best-of-N throughput in MB/s (10^6 bytes a second), by wall clock and
/// by thread CPU time.
fn throughput(input: &[u8], mut run: impl FnMut(&[u8]) -> usize) -> (f64, f64) {
    let (mut wall, mut cpu) = (f64::MAX, f64::MAX);
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        let (start, start_cpu) = (Instant::now(), thread_cpu_seconds());
        black_box(run(black_box(input)));
        cpu = cpu.min(thread_cpu_seconds() - start_cpu);
        wall = wall.min(start.elapsed().as_secs_f64());
    }
    let mb = input.len() as f64 / 1e6;
    (mb / wall, mb / cpu)
}

fn main() {
    decode();
    let input = realistic_stream();
    let naive = Naive::new();
    assert!(decode_fast(&input) > 0, "the input has pane output");
    let (fast, fast_cpu) = throughput(&input, decode_fast);
    let (slow, slow_cpu) = throughput(&input, |i| naive.decode(i));
    println!(
        "decode summary (best of 3 s each, {:.1} MB input): clawmux {fast:.0} MB/s wall, {fast_cpu:.0} MB/s CPU; \
         naive String+regex {slow:.0} MB/s wall, {slow_cpu:.0} MB/s CPU; ratio {:.1}x wall, {:.1}x CPU",
        input.len() as f64 / 1e6,
        fast / slow,
        fast_cpu / slow_cpu
    );
    Criterion::default().configure_from_args().final_summary();
}
