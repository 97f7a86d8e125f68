//! `clawmux hooks install`: the printed configuration and the merge into a
//! project's `.claude/settings.json`.

use serde_json::{Value, json};

use super::{assert_contains, clawmux, stderr, stdout};

/// The hooks configuration Claude Code documents, verbatim.
const DOCUMENTED_SETTINGS: &str = r#"{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"clawmux hook","timeout":5}]}],"Notification":[{"matcher":"permission_prompt|idle_prompt","hooks":[{"type":"command","command":"clawmux hook","timeout":5}]}]}}"#;

fn install(args: &[&str]) -> std::process::Output {
    let mut all = vec!["hooks", "install"];
    all.extend_from_slice(args);
    clawmux(&all).output().expect("run clawmux")
}

/// The events Claude Code 2.1.x sends that clawmux listens to besides the
/// reference's Stop and Notification: failed turns end with StopFailure, the
/// task list reports through TaskCreated/TaskCompleted.
const EVENTS_WITHOUT_MATCHER: [&str; 6] = [
    "Stop",
    "StopFailure",
    "PermissionRequest",
    "SessionStart",
    "TaskCreated",
    "TaskCompleted",
];

fn expected_config(command: &str) -> Value {
    let mut reference: Value = serde_json::from_str(DOCUMENTED_SETTINGS).unwrap();
    let group = json!([{"hooks": [{"type": "command", "command": command, "timeout": 5}]}]);
    for event in EVENTS_WITHOUT_MATCHER {
        reference["hooks"][event] = group.clone();
    }
    reference["hooks"]["Notification"][0]["hooks"][0]["command"] = command.into();
    reference
}

#[test]
fn prints_the_reference_configuration() {
    let out = install(&[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let printed: Value = serde_json::from_str(&stdout(&out)).expect("stdout is JSON");
    assert_eq!(printed, expected_config("clawmux hook"));

    let out = install(&["--bin", "/opt/clawmux tools/clawmux"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let printed: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(
        printed,
        expected_config("'/opt/clawmux tools/clawmux' hook")
    );
}

#[test]
fn write_merges_keeps_everything_and_is_idempotent() {
    let project = tempfile::tempdir().unwrap();
    let dir = project.path().to_str().unwrap();
    let settings_path = project.path().join(".claude/settings.json");
    std::fs::create_dir(project.path().join(".claude")).unwrap();
    let existing = json!({
        "model": "opus",
        "permissions": {"allow": ["Bash(npm test:*)"], "deny": ["Read(./.env)"]},
        "hooks": {
            "Stop": [{"hooks": [{"type": "command", "command": "notify-send 'turn done'"}]}],
            "PostToolUse": [{"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "prettier --write"}]}]
        }
    });
    std::fs::write(
        &settings_path,
        serde_json::to_string_pretty(&existing).unwrap(),
    )
    .unwrap();

    let out = install(&["--write", "--dir", dir]);
    assert!(out.status.success(), "{}", stderr(&out));
    for event in EVENTS_WITHOUT_MATCHER.iter().chain(&["Notification"]) {
        assert_contains(&stdout(&out), &format!("added {event} hook"));
    }
    let merged: Value = serde_json::from_slice(&std::fs::read(&settings_path).unwrap()).unwrap();
    assert_eq!(merged["model"], existing["model"]);
    assert_eq!(merged["permissions"], existing["permissions"]);
    assert_eq!(
        merged["hooks"]["PostToolUse"],
        existing["hooks"]["PostToolUse"]
    );
    let expected = expected_config("clawmux hook");
    assert_eq!(
        merged["hooks"]["Stop"],
        json!([existing["hooks"]["Stop"][0], expected["hooks"]["Stop"][0]])
    );
    for event in [
        "Notification",
        "PermissionRequest",
        "SessionStart",
        "StopFailure",
        "TaskCreated",
        "TaskCompleted",
    ] {
        assert_eq!(merged["hooks"][event], expected["hooks"][event], "{event}");
    }

    let first = std::fs::read(&settings_path).unwrap();
    let out = install(&["--write", "--dir", dir]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_contains(&stdout(&out), "already installed");
    assert_eq!(
        std::fs::read(&settings_path).unwrap(),
        first,
        "second run changes nothing"
    );
}

/// A project set up by an older clawmux (Stop, Notification,
/// PermissionRequest, SessionStart) gets the 2.1.x events added, and only
/// those.
#[test]
fn an_older_install_gains_the_new_events() {
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir(project.path().join(".claude")).unwrap();
    let path = project.path().join(".claude/settings.json");
    let group = json!([{"hooks": [{"type": "command", "command": "clawmux hook", "timeout": 5}]}]);
    let mut old: Value = serde_json::from_str(DOCUMENTED_SETTINGS).unwrap();
    old["hooks"]["PermissionRequest"] = group.clone();
    old["hooks"]["SessionStart"] = group;
    std::fs::write(&path, old.to_string()).unwrap();
    let out = install(&["--write", "--dir", project.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = stdout(&out);
    let added: Vec<&str> = printed
        .lines()
        .filter_map(|l| l.strip_prefix("added "))
        .filter_map(|l| l.split(' ').next())
        .collect();
    assert_eq!(added, ["StopFailure", "TaskCreated", "TaskCompleted"]);
    let written: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(written, expected_config("clawmux hook"));
}

#[test]
fn write_creates_the_settings_of_a_fresh_project() {
    let project = tempfile::tempdir().unwrap();
    let out = install(&[
        "--write",
        "--dir",
        project.path().to_str().unwrap(),
        "--bin",
        "/usr/local/bin/clawmux",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let written: Value = serde_json::from_slice(
        &std::fs::read(project.path().join(".claude/settings.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(written, expected_config("/usr/local/bin/clawmux hook"));
}

#[test]
fn a_broken_settings_file_is_reported_and_left_untouched() {
    let project = tempfile::tempdir().unwrap();
    std::fs::create_dir(project.path().join(".claude")).unwrap();
    let path = project.path().join(".claude/settings.json");
    for broken in ["{\"hooks\": {", "[1, 2]", "{\"hooks\": {\"Stop\": {}}}"] {
        std::fs::write(&path, broken).unwrap();
        let out = install(&["--write", "--dir", project.path().to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{broken}");
        assert_contains(&stderr(&out), "settings.json");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), broken);
    }
}

#[test]
fn bad_usage_exits_2() {
    for args in [&["--bin", "relative/clawmux"][..], &["--dir", "/tmp"]] {
        let out = install(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert_eq!(stdout(&out), "");
    }
}

#[test]
fn a_symlinked_settings_file_is_written_through_not_replaced() {
    let project = tempfile::tempdir().unwrap();
    let dotfiles = tempfile::tempdir().unwrap();
    let real = dotfiles.path().join("claude-settings.json");
    std::fs::write(&real, r#"{"model": "opus"}"#).unwrap();
    std::fs::create_dir(project.path().join(".claude")).unwrap();
    let link = project.path().join(".claude/settings.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();

    let out = install(&["--write", "--dir", project.path().to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    let written: Value = serde_json::from_slice(&std::fs::read(&real).unwrap()).unwrap();
    assert_eq!(written["model"], "opus");
    assert_eq!(written["hooks"], expected_config("clawmux hook")["hooks"]);
}

/// `clawmux hooks install | head -0`: the reader gone before anything is
/// written is not a crash; the command ends successfully, saying nothing.
#[test]
fn a_reader_that_went_away_is_not_a_panic() {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    let out = clawmux(&["hooks", "install"])
        .stdout(writer)
        .output()
        .expect("run clawmux");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(stderr(&out), "");
}

/// `--agent opencode` writes the plugin into OpenCode's config directory
/// (`$XDG_CONFIG_HOME/opencode`, else `~/.config/opencode`), running the
/// clawmux binary it names; without `--write` it prints the plugin.
#[test]
fn opencode_gets_its_plugin() {
    let home = tempfile::tempdir().unwrap();
    let bin = "/opt/clawmux/bin/clawmux";
    let printed = clawmux(&["hooks", "install", "--agent", "opencode", "--bin", bin])
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert!(printed.status.success(), "{}", stderr(&printed));
    let source = stdout(&printed);
    assert_contains(&source, &format!("{bin:?}"));
    assert_contains(&source, "permission.asked");
    assert!(!home.path().join(".config").exists(), "printed only");

    let written = clawmux(&[
        "hooks", "install", "--agent", "opencode", "--write", "--bin", bin,
    ])
    .env("HOME", home.path())
    .env_remove("XDG_CONFIG_HOME")
    .output()
    .unwrap();
    assert!(written.status.success(), "{}", stderr(&written));
    let plugin = home.path().join(".config/opencode/plugin/clawmux.js");
    assert_eq!(std::fs::read_to_string(&plugin).unwrap(), source);
    assert_contains(&stdout(&written), &plugin.display().to_string());
}
