//! The state directory is 0700 and its files 0600, created so under any
//! umask, and a wider directory or file found at start is reported in the
//! log and tightened.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Stdio;

use clawmux::store::log_read;

use super::{BIN, clawmux_via, wait_exit};
use crate::support::tmux::TmuxServer;

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().mode() & 0o777
}

/// Runs `serve --console` under `umask 000` with state in `home`, sends one
/// message, ends its input and waits for it to stop.
fn serve_once(root: &Path, home: &Path) {
    let tmux = TmuxServer::new();
    let config = root.join("config.toml");
    fs::write(
        &config,
        format!(
            "workspace_root = {:?}\n[tmux]\nsocket = {:?}\n",
            root.join("ws").display().to_string(),
            tmux.socket
        ),
    )
    .unwrap();
    let config = config.display().to_string();
    let mut child = clawmux_via("sh", home, &[])
        .env("SHELL_BIN", BIN)
        .arg("-c")
        .arg(r#"umask 000; exec "$SHELL_BIN" serve --console --agent sim --config "$1""#)
        .arg("sh")
        .arg(&config)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"/gsd:help\n").unwrap();
    drop(stdin);
    let status = wait_exit(child).expect("serve exits at end of input");
    assert!(status.success(), "{status:?}");
}

#[test]
fn state_is_created_private_under_umask_000() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("state");
    serve_once(root.path(), &home);
    assert_eq!(mode(&home), 0o700);
    let mut files = Vec::new();
    for entry in fs::read_dir(&home).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            files.push(entry.file_name().to_string_lossy().into_owned());
            assert_eq!(mode(&entry.path()), 0o600, "{:?}", entry.path());
        }
    }
    assert!(files.iter().any(|f| f == "events.jsonl"), "{files:?}");
    assert!(files.iter().any(|f| f == "state.db"), "{files:?}");
}

#[test]
fn wider_state_is_reported_and_tightened_at_start() {
    let root = tempfile::tempdir().unwrap();
    let home = root.path().join("state");
    fs::create_dir(&home).unwrap();
    fs::set_permissions(&home, fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(home.join("events.jsonl"), "").unwrap();
    fs::set_permissions(home.join("events.jsonl"), fs::Permissions::from_mode(0o644)).unwrap();
    serve_once(root.path(), &home);
    assert_eq!(mode(&home), 0o700);
    assert_eq!(mode(&home.join("events.jsonl")), 0o600);
    let records = log_read::read_all(&home).unwrap().records;
    let found: Vec<_> = records
        .iter()
        .filter(|r| r.kind == "state_permissions")
        .map(|r| (r.field("mode").unwrap_or(""), r.fields["tightened"].clone()))
        .collect();
    assert_eq!(
        found,
        [("755", true.into()), ("644", true.into())],
        "{records:?}"
    );
}
