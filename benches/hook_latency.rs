//! End-to-end cost of the hook path: from Claude Code starting `clawmux hook`
//! with a recorded `Stop` payload on stdin to the daemon's `HookListener`
//! yielding the event. Baseline, measured in the same run: starting and
//! reaping `/bin/true`, the floor every command hook pays. Prints the ratio.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use clawmux::hooks::HookListener;
use criterion::{Criterion, criterion_group, criterion_main};

const BIN: &str = env!("CARGO_BIN_EXE_clawmux");
const PAYLOAD: &[u8] = include_bytes!("../tests/integ/payloads/stop.json");

/// Per-iteration samples of each benchmark, for the medians printed at the end.
static HOOK: Mutex<Vec<Duration>> = Mutex::new(Vec::new());
static BASELINE: Mutex<Vec<Duration>> = Mutex::new(Vec::new());

fn record(samples: &Mutex<Vec<Duration>>, d: Duration) {
    if let Ok(mut s) = samples.lock() {
        s.push(d);
    }
}

fn median(samples: &Mutex<Vec<Duration>>) -> Duration {
    let mut s = samples.lock().map(|s| s.clone()).unwrap_or_default();
    s.sort();
    s.get(s.len() / 2).copied().unwrap_or_default()
}

fn bench(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let home = tempfile::tempdir().expect("temp dir");
    let mut listener = runtime
        .block_on(async { HookListener::bind(home.path()) })
        .expect("bind hook socket");

    let mut group = c.benchmark_group("hook");
    group
        .sample_size(30)
        .measurement_time(Duration::from_secs(8));
    group.bench_function("baseline_spawn_true", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                let status = Command::new("/bin/true").status().expect("run true");
                let took = start.elapsed();
                assert!(status.success());
                record(&BASELINE, took);
                total += took;
            }
            total
        })
    });
    group.bench_function("clawmux_hook_stdin_to_daemon", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                let mut child = Command::new(BIN)
                    .arg("hook")
                    .env("CLAWMUX_HOME", home.path())
                    .env("TMUX_PANE", "%3")
                    .env_remove("CLAWMUX_LOG")
                    .stdin(Stdio::piped())
                    .stdout(Stdio::null())
                    .spawn()
                    .expect("spawn clawmux hook");
                let mut stdin = child.stdin.take().expect("stdin");
                stdin.write_all(PAYLOAD).expect("write payload");
                drop(stdin);
                let event = runtime.block_on(listener.next()).expect("hook event");
                let took = start.elapsed();
                assert_eq!(event.tmux_pane.as_deref(), Some("%3"));
                record(&HOOK, took);
                total += took;
                child.wait().expect("reap clawmux hook");
            }
            total
        })
    });
    group.finish();

    let (hook, baseline) = (median(&HOOK), median(&BASELINE));
    println!(
        "hook path: median {hook:?} from spawn to the daemon receiving the event; \
         /bin/true spawn+exit median {baseline:?}; ratio {:.2}x",
        hook.as_secs_f64() / baseline.as_secs_f64().max(f64::MIN_POSITIVE)
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
