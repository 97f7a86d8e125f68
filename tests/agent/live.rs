//! Each scenario run live: what Claude Code showed and sent back to the
//! fake API, and what the recording holds.

use crate::support::claude::{claude_or_skip, clawmux_stdin};

use super::scenarios::{self, Done};

/// The pane's bytes in a recording, decoded by `clawmux decode`.
fn decoded(done: &Done) -> String {
    let (code, out, err) = clawmux_stdin(&["decode", "--pane", "%0"], done.recording.as_bytes());
    assert_eq!(code, 0, "decode failed: {err}");
    out
}

/// The tool results Claude Code sent back, all requests together.
fn tool_results(done: &Done) -> Vec<String> {
    done.run
        .api
        .scripted_requests()
        .iter()
        .flat_map(|r| r.tool_results())
        .collect()
}

#[test]
fn bash_permission() {
    let Some(claude) = claude_or_skip("agent::live::bash_permission") else {
        return;
    };
    let done = scenarios::bash_permission(&claude, true);
    assert!(
        done.screens[0].contains("touch made-by-bash.txt"),
        "{}",
        done.screens[0]
    );
    assert!(done.run.env.project().join("made-by-bash.txt").exists());
    assert_eq!(done.run.api.remaining(), 0);
    assert_eq!(done.run.api.exhausted(), 0);
    let text = decoded(&done);
    // Claude Code moves the cursor instead of writing spaces: look for words.
    assert!(text.contains("proceed?"), "{text}");
    assert!(text.contains("marker"), "{text}");
}
