//! `clawmux watch` attached to a real tmux server.

use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use super::DEADLINE;
use crate::support::tmux::TmuxServer;

#[tokio::test]
async fn watch_prints_pane_output_as_json_lines_and_ends_with_the_server() {
    let server = TmuxServer::new();
    server.new_session("w", "exec cat");
    let mut watch = Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .args(["watch", "-L", &server.socket, "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(watch.stdout.take().unwrap()).lines();
    let mut stderr = BufReader::new(watch.stderr.take().unwrap()).lines();
    let banner = tokio::time::timeout(DEADLINE, stderr.next_line()).await;
    let banner = banner.expect("watch attaches").unwrap().unwrap_or_default();
    assert!(banner.contains("watching session w"), "{banner}");

    server.ok(&["send-keys", "-t", "w", "-l", "hello-watch"]);
    let output = tokio::time::timeout(DEADLINE, async {
        while let Some(line) = stdout.next_line().await.unwrap() {
            let json: serde_json::Value = serde_json::from_str(&line).unwrap();
            assert!(json["ts"].is_u64(), "{line}");
            if json["kind"] == "output" && json["text"].as_str().unwrap().contains("hello-watch") {
                return json;
            }
        }
        panic!("watch ended before the output");
    })
    .await
    .expect("the output is printed live");
    assert!(output["pane"].as_str().unwrap().starts_with('%'));

    server.ok(&["kill-server"]);
    let status = tokio::time::timeout(DEADLINE, watch.wait())
        .await
        .expect("watch ends with the server")
        .unwrap();
    assert!(status.success(), "{status}");
}
