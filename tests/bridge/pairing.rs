//! Pairing under attack (issue 48): many `clawmux pairing approve`
//! processes run at once (the real binary) all keep their approval. The
//! test names the code that makes it pass.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};

use clawmux::bridge::access::pairing::{Pairing, PendingPairing};

/// Item 8: 33 `clawmux pairing approve` processes started at once, each
/// approving its own code: each says it approved, and every approval is
/// in `allowed.json` afterwards.
///
/// Passes by the lock `Pairing::approve` holds around its read, change and
/// write of `allowed.json` (`StateFile::lock`) and each save's own temp
/// file (`StateFile::temp`, `crates/store/src/state_file.rs`); without them
/// approvals printed "approved" and were lost (9 of 33 once).
#[test]
fn approvals_run_at_once_are_all_kept() {
    const APPROVALS: usize = 33;
    let home = tempfile::tempdir().expect("temp dir");
    let pairing = Pairing::new(home.path());
    let now = clawmux::store::clock::now_ms();
    let mut codes = BTreeMap::new();
    for i in 0..APPROVALS {
        let (code, sender) = (format!("CODE{i:04}"), format!("ou_{i}"));
        let pending = PendingPairing {
            open_id: sender.clone(),
            created_ms: now,
        };
        pairing.save_pending(&code, pending).expect("code kept");
        codes.insert(code, sender);
    }
    let runs: Vec<_> = (codes.keys())
        .map(|code| {
            Command::new(env!("CARGO_BIN_EXE_clawmux"))
                .args(["pairing", "approve", code])
                .env("CLAWMUX_HOME", home.path())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("clawmux runs")
        })
        .collect();
    for (run, code) in runs.into_iter().zip(codes.keys()) {
        let out = run.wait_with_output().expect("it ends");
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && said.contains("approved"),
            "{code}: {said}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut allowed = pairing.allowed().expect("allowed.json reads");
    allowed.sort();
    let mut wanted: Vec<String> = codes.into_values().collect();
    wanted.sort();
    assert_eq!(allowed, wanted, "approvals lost");
    assert!(pairing.pending().expect("pending reads").is_empty());
    let left: Vec<_> = (std::fs::read_dir(home.path()).expect("the home lists"))
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.contains(".tmp"))
        .collect();
    assert_eq!(left, Vec::<String>::new(), "temp files left");
}
