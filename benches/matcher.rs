//! Matcher throughput: every default line pattern of the `gsd` profile over
//! realistic pane text, as the detector scans it (a literal prefilter
//! picks candidate lines, then one `RegexSet` match per candidate), against
//! two baselines measured in the same run: the same `RegexSet` matched
//! against every line with no prefilter (is the prefilter worth its code?),
//! and one regex per pattern, each scanning the whole buffer.
//!
//! `cargo bench --bench matcher` prints criterion's numbers and, last, a
//! summary line with the three throughputs and their ratios.

use std::hint::black_box;
use std::time::{Duration, Instant};

use clawmux::detect::{LineHit, Profiles};
use criterion::{Criterion, Throughput};
use regex::{Regex, RegexSet};

/// Size of the generated pane text.
const CORPUS_BYTES: usize = 4 << 20;
/// Lines per batch: about what one `%output` chunk finishes.
const BATCH_LINES: usize = 64;
/// Repetitions for the summary (best run counts).
const SUMMARY_RUNS: usize = 5;

/// Pane text as agents print it: prose, tool output, build logs, spinner
/// frames, box drawing, with a rare error or progress line.
fn corpus() -> Vec<String> {
    let kinds = [
        "⏺ I'll update the parser so that partial escape sequences carry over between chunks.",
        "   Compiling clawmux v0.1.0 (/work/clawmux) with some dependencies and features",
        "  ⎿  src/pane/text.rs: 312 lines, added handling for cursor-up redraws in the live region",
        "✶ Transfiguring… (9m 34s · ↓ 64.5k tokens · esc to interrupt)",
        "────────────────────────────────────────────────────────────────────────",
        "test detect::sansio::detections_do_not_depend_on_chunking ... ok",
        "    fn feed(&mut self, now: Millis, lines: &[String], sink: &mut impl FnMut(Detection)) {",
        "     Running unittests src/lib.rs (target/debug/deps/clawmux-0f3c2a1b)",
        "  Read 42 files, searched for \"handler\" in src/**/*.rs, found nothing unusual here",
        "diff --git a/crates/detect/src/lib.rs b/crates/detect/src/lib.rs index 3f2a1c0..8b9d7e4 100644",
    ];
    let rare = [
        "error[E0308]: mismatched types",
        "  Progress: ████████░░ 80%",
        "━━━ GSD ► EXECUTING WAVE 2",
        "Compiled with 0 errors, see error-handling.md",
    ];
    let mut lines = Vec::new();
    let mut bytes = 0;
    let mut i = 0usize;
    while bytes < CORPUS_BYTES {
        let line = if i.is_multiple_of(97) {
            rare[(i / 97) % rare.len()].to_owned()
        } else {
            format!("{} #{i}", kinds[i % kinds.len()])
        };
        bytes += line.len() + 1;
        lines.push(line);
        i += 1;
    }
    lines
}

fn batches(lines: &[String]) -> Vec<String> {
    lines.chunks(BATCH_LINES).map(|c| c.join("\n")).collect()
}

fn main() {
    let profile = Profiles::defaults()
        .and_then(|p| p.get("gsd"))
        .unwrap_or_else(|e| panic!("default profiles load: {e}"));
    let lines = corpus();
    let batches = batches(&lines);
    let whole = lines.join("\n");
    let naive: Vec<Regex> = profile
        .line_patterns()
        .iter()
        .map(|p| Regex::new(&format!("(?m){p}")).unwrap_or_else(|e| panic!("{p}: {e}")))
        .collect();
    let set_only = RegexSet::new(profile.line_patterns())
        .unwrap_or_else(|e| panic!("the profile's patterns compile as a set: {e}"));

    let set_pass = || {
        let mut hits = 0usize;
        for b in &batches {
            profile.scan_lines(b, |_, h: LineHit| {
                hits += 1;
                black_box(h);
            });
        }
        hits
    };
    let naive_pass = || {
        naive
            .iter()
            .map(|re| re.find_iter(black_box(&whole)).count())
            .sum::<usize>()
    };
    // The detector's scan without its prefilter: every line of every
    // batch through the set, asking which patterns matched (as the
    // detector must). Counts lines the set matched; the detector's per-hit
    // work (guards, progress) is left out, which only favours this row.
    let set_only_pass = || {
        let mut hits = 0usize;
        for b in &batches {
            for line in black_box(b).split('\n') {
                hits += usize::from(set_only.matches(line).matched_any());
            }
        }
        hits
    };
    // All must see the rare lines, or the comparison is meaningless.
    assert!(set_pass() > 0 && set_only_pass() > 0 && naive_pass() > 0);

    let mut c = Criterion::default()
        .measurement_time(Duration::from_secs(5))
        .configure_from_args();
    let mut group = c.benchmark_group("matcher");
    group.throughput(Throughput::Bytes(whole.len() as u64));
    group.bench_function("regexset_batches", |b| b.iter(set_pass));
    group.bench_function("regexset_only_no_prefilter", |b| b.iter(set_only_pass));
    group.bench_function("naive_regex_per_pattern", |b| b.iter(naive_pass));
    group.finish();
    c.final_summary();

    let best = |f: &dyn Fn() -> usize| {
        (0..SUMMARY_RUNS)
            .map(|_| {
                let t = Instant::now();
                black_box(f());
                t.elapsed()
            })
            .min()
            .unwrap_or_default()
    };
    let mbps = |d: Duration| whole.len() as f64 / d.as_secs_f64() / 1e6;
    let fast = mbps(best(&set_pass));
    let set_alone = mbps(best(&set_only_pass));
    let slow = mbps(best(&naive_pass));
    println!(
        "matcher summary: {} patterns, {:.1} MB corpus: prefilter + RegexSet {fast:.0} MB/s, RegexSet alone {set_alone:.0} MB/s (prefilter {:.2}x), naive {slow:.0} MB/s, ratio {:.1}x",
        naive.len(),
        whole.len() as f64 / 1e6,
        fast / set_alone,
        fast / slow
    );
}
