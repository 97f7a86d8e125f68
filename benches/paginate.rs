//! Paginating 1 MB of markdown into Feishu cards, against a naive baseline
//! that measures each page by re-serializing it as JSON after every line.
//! Prints the ratio of the two, measured in the same run.

use std::hint::black_box;
use std::time::{Duration, Instant};

use clawmux::feishu::paginate::{TARGET_CARD_JSON_BYTES, paginate};
use clawmux::message::Tone;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// 1 MB of mixed markdown: prose, tables, code fences, escapes.
fn input() -> String {
    let mut s = String::new();
    let mut i = 0;
    while s.len() < 1024 * 1024 {
        match i % 4 {
            0 => s.push_str(&format!(
                "## Step {i}\n\nRan `cargo test` with \"quotes\" and back\\slashes.\n\n"
            )),
            1 => {
                s.push_str("| file | ok |\n|---|---|\n");
                for r in 0..20 {
                    s.push_str(&format!("| src/m{i}_{r}.rs | yes |\n"));
                }
                s.push('\n');
            }
            2 => {
                s.push_str("```text\n");
                for r in 0..100 {
                    s.push_str(&format!("line {r}\twith a tab and ünïcödé\n"));
                }
                s.push_str("```\n\n");
            }
            _ => s.push_str(&format!("{} {i}\n\n", "word ".repeat(60))),
        }
        i += 1;
    }
    s
}

/// The obvious approach: add lines while the page's JSON, re-serialized
/// after each line, stays under the target (no fence or escape handling).
fn naive(text: &str) -> Vec<String> {
    let mut pages = Vec::new();
    let mut page = String::new();
    for line in text.lines() {
        let mut candidate = page.clone();
        candidate.push_str(line);
        candidate.push('\n');
        let json_len = serde_json::to_string(&candidate).map_or(usize::MAX, |j| j.len());
        if json_len > TARGET_CARD_JSON_BYTES - 512 && !page.is_empty() {
            pages.push(std::mem::take(&mut page));
            page.push_str(line);
            page.push('\n');
        } else {
            page = candidate;
        }
    }
    pages.push(page);
    pages
}

fn mean_time(mut f: impl FnMut(), runs: u32) -> Duration {
    let start = Instant::now();
    for _ in 0..runs {
        f();
    }
    start.elapsed() / runs
}

fn bench(c: &mut Criterion) {
    let text = input();
    let mut group = c.benchmark_group("paginate_1mb");
    group.throughput(Throughput::Bytes(text.len() as u64));
    group.bench_function("clawmux", |b| {
        b.iter(|| paginate("Result", Tone::Done, black_box(&text)))
    });
    group.sample_size(10);
    group.bench_function("naive_reserialize", |b| b.iter(|| naive(black_box(&text))));
    group.finish();

    let ours = mean_time(
        || drop(black_box(paginate("Result", Tone::Done, &text))),
        20,
    );
    let base = mean_time(|| drop(black_box(naive(&text))), 3);
    let cards = paginate("Result", Tone::Done, &text).len();
    println!(
        "paginate 1 MB: clawmux {ours:?} ({cards} cards), naive re-serializing baseline {base:?}: {:.1}x faster",
        base.as_secs_f64() / ours.as_secs_f64()
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
