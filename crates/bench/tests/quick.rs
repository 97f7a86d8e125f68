//! `clawmux-bench --quick` on real tmux servers: the table has every row,
//! tmux never threw clawmux out, every part measured something, and the
//! marker lines were detected under the flood. Behaviour only: no timing
//! thresholds (the machines are noisy).

use std::process::Command;

use serde_json::Value;

#[test]
fn quick_bench_reports_every_row_and_keeps_up() {
    let out = Command::new(env!("CARGO_BIN_EXE_clawmux-bench"))
        .args(["--quick", "--json"])
        .output()
        .expect("clawmux runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "bench failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_str(stdout.lines().last().expect("a JSON line"))
        .expect("the last line is JSON");
    let results = &json["results"];
    let settings = &results["settings"];

    // Every row is in the table, with a value.
    let names: Vec<&str> = json["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["name"].as_str().expect("row name"))
        .collect();
    let mut expected = vec![
        "clawmux CPU s/min",
        "polling 500 ms CPU s/min",
        "clawmux / polling",
    ];
    for flood in ["flood max", "flood paced"] {
        for what in [
            "pane MB/s no client",
            "pane MB/s bare tmux -C",
            "pane MB/s clawmux",
            "pane slowdown",
            "clawmux peak RSS",
            "clawmux CPU",
            "tmux server CPU",
            "output received",
            "%pause / lagged",
            "%exit / disconnect",
            "marker latency ms",
        ] {
            expected.push(what);
            assert!(
                names
                    .iter()
                    .any(|n| n.starts_with(flood) && n.ends_with(what)),
                "no row {flood} … {what} in {names:?}"
            );
        }
    }
    for what in expected {
        assert!(
            stdout.lines().any(|l| l.contains(what)),
            "table misses {what}:\n{stdout}"
        );
    }

    // The idle watcher attached every pane and the designs were measured.
    assert_eq!(results["idle_watcher"]["sessions"], settings["idle_panes"]);
    assert!(
        results["idle_polling"]["process"]
            .as_f64()
            .expect("polling cpu")
            > 0.0
    );

    let panes = settings["flood_panes"].as_u64().expect("flood panes");
    for flood in results["floods"].as_array().expect("floods") {
        let w = &flood["watcher"];
        // Every session's pane was watched: the writers and the marker.
        assert_eq!(w["sessions"].as_u64(), Some(panes + 1), "{flood}");
        assert!(
            !w["exits"].to_string().contains("too far behind"),
            "tmux threw clawmux out: {flood}"
        );
        assert_eq!(
            w["ended"].as_array().map(Vec::len),
            Some(0),
            "a client ended: {flood}"
        );
        // Writers wrote in both runs, clawmux received output.
        for run in ["no_client", "bare_client", "watched"] {
            let bytes = flood[run]["pane_bytes"].as_array().expect("pane bytes");
            assert_eq!(bytes.len() as u64, panes);
            assert!(
                bytes.iter().all(|b| b.as_u64() > Some(0)),
                "{run}: {bytes:?}"
            );
        }
        assert!(w["output_bytes"].as_u64() > Some(0));
        assert!(flood["watcher_peak_rss"].as_u64() > Some(0));
        // The marker was detected under the flood, each line once at most.
        let detected = w["marker_latencies_ms"]
            .as_array()
            .expect("latencies")
            .len() as u64;
        let printed = flood["watched"]["markers_printed"]
            .as_u64()
            .expect("printed");
        assert!(
            detected >= 1 && detected <= printed,
            "{detected} of {printed} markers"
        );
    }
}
