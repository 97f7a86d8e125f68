//! `clawmux card` and `clawmux doctor` as processes.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::fake_feishu::{APP_ID, APP_SECRET, FakeFeishu};

fn clawmux() -> Command {
    Command::new(env!("CARGO_BIN_EXE_clawmux"))
}

fn card_cmd(args: &[&str], stdin: &[u8]) -> (i32, Vec<u8>, String) {
    let mut child = clawmux()
        .arg("card")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn clawmux");
    let mut input = child.stdin.take().expect("stdin");
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || input.write_all(&data));
    let out = child.wait_with_output().expect("wait");
    // A process that rejects its arguments exits without reading stdin.
    if let Err(e) = writer.join().expect("writer") {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "write stdin: {e}");
    }
    (
        out.status.code().unwrap_or(-1),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// About 2 MB of mixed markdown: prose, tables, code fences, long lines,
/// JSON-hostile characters.
fn two_megabytes() -> String {
    let mut s = String::new();
    let mut i = 0;
    while s.len() < 2 * 1024 * 1024 {
        match i % 5 {
            0 => s.push_str(&format!(
                "## Section {i}\n\nSome *prose* with \"quotes\", tabs\tand back\\slashes {i}.\n\n"
            )),
            1 => {
                s.push_str("| file | lines |\n|---|---|\n");
                for r in 0..40 {
                    s.push_str(&format!("| src/mod_{i}_{r}.rs | {r} |\n"));
                }
                s.push('\n');
            }
            2 => {
                s.push_str("```rust\n");
                for r in 0..300 {
                    s.push_str(&format!("fn f_{i}_{r}() -> &'static str {{ \"{r}\" }}\n"));
                }
                s.push_str("```\n\n");
            }
            3 => s.push_str(&format!("{} end-{i}\n\n", "日本語のテキスト ".repeat(200))),
            _ => s.push_str(&format!("- item {i} \u{1}\u{7f} <b>not html</b> &amp;\n")),
        }
        i += 1;
    }
    s
}

#[test]
fn card_pages_two_megabytes_within_limits() {
    let input = two_megabytes();
    let (code, stdout, stderr) = card_cmd(
        &["--title", "Result", "--theme", "success"],
        input.as_bytes(),
    );
    assert_eq!(code, 0, "{stderr}");
    let cards: Vec<Value> = serde_json::from_slice(&stdout).expect("a JSON array");
    assert!(cards.len() > 60, "{} cards", cards.len());
    let mut texts = Vec::new();
    for (i, card) in cards.iter().enumerate() {
        let json = card.to_string();
        assert!(json.len() <= 30 * 1024, "card {i} is {} bytes", json.len());
        assert_eq!(card["schema"], "2.0");
        assert_eq!(card["header"]["template"], "green");
        assert_eq!(
            card["header"]["title"]["content"],
            format!("Result [{}/{}]", i + 1, cards.len())
        );
        assert!(!json.contains("\"tag\":\"action\""));
        let elements = card["body"]["elements"].as_array().expect("body.elements");
        let text = elements[0]["content"].as_str().expect("markdown");
        let fences = text.lines().filter(|l| l.starts_with("```")).count();
        assert_eq!(fences % 2, 0, "card {i} has unbalanced fences");
        texts.push(text.to_string());
    }
    let all = texts.join("\n");
    let mut from = 0;
    for line in input.lines() {
        // Every line appears, in order (fence lines may be repeated).
        match all[from..].find(line) {
            Some(at) => from += at + line.len(),
            None => panic!("line missing or out of order: {line:?}"),
        }
    }
}

#[test]
fn card_rejects_non_utf8_and_bad_theme() {
    let (code, _, stderr) = card_cmd(&[], b"ok \xff\xfe");
    assert_eq!(code, 2);
    assert!(stderr.contains("not UTF-8"), "{stderr}");
    let (code, _, stderr) = card_cmd(&["--theme", "purple"], b"x");
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn card_of_short_input_is_one_card() {
    let (code, stdout, _) = card_cmd(&["--title", "T"], b"hello **world**\n");
    assert_eq!(code, 0);
    let cards: Value = serde_json::from_slice(&stdout).expect("json");
    assert_eq!(cards.as_array().map(Vec::len), Some(1));
    assert_eq!(cards[0]["header"]["title"]["content"], "T");
    assert_eq!(cards[0]["header"]["template"], "blue");
    assert_eq!(
        cards[0]["body"]["elements"][0]["content"],
        "hello **world**"
    );
}

/// `clawmux doctor` against `fake`, with the simulated agent configured
/// (so only the Feishu checks can block).
async fn doctor(fake: &FakeFeishu, secret: &str) -> std::process::Output {
    let home = home_with("[agent]\ncommand = \"sim\"\n");
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_clawmux"));
    cmd.arg("doctor")
        .env("CLAWMUX_HOME", home.path())
        .env("FEISHU_APP_ID", APP_ID)
        .env("FEISHU_APP_SECRET", secret)
        .env("FEISHU_DOMAIN", fake.base_url())
        .env_remove("FEISHU_ENCRYPT_KEY");
    cmd.output().await.expect("run doctor")
}

#[tokio::test]
async fn doctor_checks_credentials() {
    let fake = FakeFeishu::start().await;
    let ok = doctor(&fake, APP_SECRET).await;
    let stdout = String::from_utf8_lossy(&ok.stdout);
    assert_eq!(ok.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("ok: credentials accepted"), "{stdout}");
    assert!(
        stdout.contains("ok: the app is a bot (open_id ou_"),
        "{stdout}"
    );
    assert!(
        stdout.contains("ok: long connection endpoint available"),
        "{stdout}"
    );

    let bad = doctor(&fake, "wrong").await;
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        stderr.contains("code 10014") && stderr.contains("FEISHU_APP_SECRET"),
        "{stderr}"
    );
}

/// A state directory holding `config.toml` with `config`, mode 0700.
fn home_with(config: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().expect("tempdir");
    std::fs::write(home.path().join("config.toml"), config).expect("write config");
    home
}

/// `clawmux doctor ARGS` without Feishu credentials, in `home`, with
/// only the system's directories on PATH (tmux, no agents).
fn doctor_offline(home: &std::path::Path, args: &[&str]) -> std::process::Output {
    clawmux()
        .arg("doctor")
        .args(args)
        .env("CLAWMUX_HOME", home)
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env_remove("FEISHU_APP_ID")
        .env_remove("FEISHU_APP_SECRET")
        .output()
        .expect("run doctor")
}

/// Without credentials `doctor` names every missing variable in one run,
/// still checks the rest (tmux, state directory, config, agent) and
/// points at `doctor --agent` and `serve --console`; nothing there blocks
/// serving (the console needs no Feishu), so it exits 0.
#[test]
fn doctor_without_credentials_checks_everything_else() {
    let home = home_with("[agent]\ncommand = \"sim\"\n");
    let out = doctor_offline(home.path(), &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    let line = (stdout.lines())
        .find(|l| l.starts_with("feishu-credentials"))
        .unwrap_or_default();
    assert!(
        line.contains("FEISHU_APP_ID and FEISHU_APP_SECRET not set"),
        "{stdout}"
    );
    assert!(
        stdout.contains("`clawmux doctor --agent`") && stdout.contains("`clawmux serve --console`"),
        "{stdout}"
    );
    for check in ["state-dir ", "config ", "tmux ", "fonts ", "agent "] {
        assert!(
            stdout.lines().any(|l| l.starts_with(check)),
            "no {check:?} line in {stdout}"
        );
    }
    assert!(stdout.contains("config.toml read"), "{stdout}");
    assert!(stdout.contains("simulated agent"), "{stdout}");
}

/// A configured agent that is not installed blocks serving: exit 1, the
/// finding on stdout with its fix, and one line per blocking finding on
/// stderr; a state directory others can read is a warning with its chmod.
#[test]
fn doctor_names_a_missing_agent_and_an_open_state_directory() {
    use std::os::unix::fs::PermissionsExt;
    let home = home_with("[agent]\ncommand = \"sim\"\n[projects.demo]\nagent = \"aider\"\n");
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let out = doctor_offline(home.path(), &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains("error: Aider is not installed")
            && stdout.contains("fix: install PyPI aider-chat (release 0.86.2 tested)"),
        "{stdout}"
    );
    assert!(stderr.contains("agent: Aider is not installed"), "{stderr}");
    assert!(
        stdout.contains("mode 0755")
            && stdout.contains(&format!("chmod 700 {}", home.path().display())),
        "{stdout}"
    );
    // A broken config is an error too, and the other checks still run.
    std::fs::write(home.path().join("config.toml"), "[agent]\nbogus = 1\n").expect("write");
    let out = doctor_offline(home.path(), &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("config             error:") && stdout.contains("bogus"),
        "{stdout}"
    );
    assert!(stdout.lines().any(|l| l.starts_with("tmux ")), "{stdout}");
}

/// `--json`: an array of `{check, ok, severity, detail, fix}`, the same
/// findings, the same exit code.
#[test]
fn doctor_json_lists_every_finding() {
    let home = home_with("[agent]\ncommand = \"sim\"\n[projects.demo]\nagent = \"aider\"\n");
    let out = doctor_offline(home.path(), &["--json"]);
    assert_eq!(out.status.code(), Some(1));
    let findings: Vec<Value> = serde_json::from_slice(&out.stdout).expect("JSON array");
    for f in &findings {
        for key in ["check", "ok", "severity", "detail", "fix"] {
            assert!(f.get(key).is_some(), "{key} missing in {f}");
        }
        assert_eq!(f["ok"], Value::Bool(f["severity"] == "ok"), "{f}");
    }
    let checks: Vec<&str> = findings
        .iter()
        .filter_map(|f| f["check"].as_str())
        .collect();
    for check in [
        "state-dir",
        "config",
        "tmux",
        "fonts",
        "agent",
        "feishu-credentials",
    ] {
        assert!(checks.contains(&check), "{check} missing in {checks:?}");
    }
    assert!(
        findings.iter().any(|f| f["severity"] == "error"
            && f["detail"]
                .as_str()
                .unwrap_or_default()
                .contains("Aider is not installed")),
        "{findings:?}"
    );
}

#[tokio::test]
async fn doctor_stops_on_a_fatal_long_connection_refusal() {
    let fake = FakeFeishu::start().await;
    fake.refuse_handshake(Some((403, 1000040350, "exceed conn limit")));
    let out = doctor(&fake, APP_SECRET).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("1000040350")
            && stderr.contains("exceed conn limit")
            && stderr.contains("too many long connections"),
        "{stderr}"
    );
    // A refusal Feishu may lift is still a failure: the intake cannot
    // work now, and the finding says the console is the place to look.
    fake.refuse_handshake(None);
    fake.refuse_endpoint(Some((1000040343, "internal error")));
    let out = doctor(&fake, APP_SECRET).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("(the app's console)"), "{stderr}");
    assert!(stderr.contains("事件与回调"), "{stderr}");
}

/// The daemon cannot receive events any more (Feishu refused the long
/// connection for good: 514 with 1000040350): `serve` exits 1 with one
/// line saying why, so a supervisor restarts or alerts; `doctor` tells
/// the same refusal.
#[tokio::test]
async fn serve_exits_non_zero_when_the_long_connection_is_refused_for_good() {
    let fake = FakeFeishu::start().await;
    fake.refuse_handshake(Some((514, 1000040350, "exceed conn limit")));
    let home = tempfile::tempdir().expect("tempdir");
    let serve = tokio::process::Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .args(["serve", "--agent", "sim"])
        .env("CLAWMUX_HOME", home.path())
        .env("FEISHU_APP_ID", APP_ID)
        .env("FEISHU_APP_SECRET", APP_SECRET)
        .env("FEISHU_DOMAIN", fake.base_url())
        .env_remove("FEISHU_ENCRYPT_KEY")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), serve)
        .await
        .expect("serve kept running after the refusal")
        .expect("run serve");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains("1000040350")
            && last.contains("too many long connections")
            && last.contains("no Feishu events can arrive"),
        "{stderr}"
    );
    let out = doctor(&fake, APP_SECRET).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("1000040350"), "{stderr}");
}

/// `doctor` compares this host's clock with the `Date` of Feishu's
/// answers and says how far off it is.
#[tokio::test]
async fn doctor_reports_the_clock_skew() {
    let fake = FakeFeishu::start().await;
    let out = doctor(&fake, APP_SECRET).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("ok: clock within"), "{stdout}");
    fake.set_clock_offset(600);
    let out = doctor(&fake, APP_SECRET).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("warning: this host's clock is 600 s behind Feishu's")
            || stdout.contains("warning: this host's clock is 599 s behind Feishu's")
            || stdout.contains("warning: this host's clock is 601 s behind Feishu's"),
        "{stdout}"
    );
}

/// An agent release outside the tested range is a warning naming both
/// releases (serving still works: exit 0); the real `--version` output
/// form is parsed (`2.1.332 (Claude Code)`).
#[test]
fn doctor_compares_the_agent_release_with_the_tested_ones() {
    use std::os::unix::fs::PermissionsExt;
    let home = home_with("[agent]\ncommand = \"claude\"\n");
    let bin = home.path().join("bin");
    std::fs::create_dir(&bin).expect("mkdir");
    let claude = bin.join("claude");
    let doctor = |release: &str| {
        std::fs::write(
            &claude,
            format!("#!/bin/sh\necho '{release} (Claude Code)'\n"),
        )
        .expect("write");
        std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        clawmux()
            .arg("doctor")
            .env("CLAWMUX_HOME", home.path())
            .env(
                "PATH",
                format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display()),
            )
            .env_remove("FEISHU_APP_ID")
            .env_remove("FEISHU_APP_SECRET")
            .output()
            .expect("run doctor")
    };
    let old = doctor("1.0.0");
    let stdout = String::from_utf8_lossy(&old.stdout);
    assert_eq!(old.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains(
            "warning: Claude Code 1.0.0 is older than the oldest release supported (2.1.197)"
        ),
        "{stdout}"
    );
    let tested = doctor("2.1.197");
    let stdout = String::from_utf8_lossy(&tested.stdout);
    assert!(
        stdout.contains("ok: Claude Code 2.1.197 (a release tested)"),
        "{stdout}"
    );
    let newer = doctor("2.9.0");
    let stdout = String::from_utf8_lossy(&newer.stdout);
    assert!(
        stdout.contains(&format!(
            "warning: Claude Code 2.9.0 is not the release tested ({})",
            clawmux::agents::claude::NEWEST_TESTED
        )) && stdout.contains("clawmux doctor --agent"),
        "{stdout}"
    );
}

/// Hooks: missing, a warning with the `hooks install` command; after
/// `clawmux hooks install --write --dir P`, doctor run in P finds them.
#[test]
fn doctor_finds_the_hooks_hooks_install_wrote() {
    let home = home_with("[agent]\ncommand = \"claude\"\n");
    let project = tempfile::tempdir().expect("tempdir");
    let run = || {
        clawmux()
            .arg("doctor")
            .current_dir(project.path())
            .env("CLAWMUX_HOME", home.path())
            .env("HOME", home.path())
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env_remove("FEISHU_APP_ID")
            .env_remove("FEISHU_APP_SECRET")
            .output()
            .expect("run doctor")
    };
    let before = run();
    let stdout = String::from_utf8_lossy(&before.stdout);
    assert!(
        stdout.contains(
            "hooks              warning: Claude Code: no clawmux hooks in .claude/settings.json"
        ) && stdout.contains(
            "fix: clawmux hooks install --agent claude --write --dir <project directory>"
        ),
        "{stdout}"
    );
    let install = clawmux()
        .args(["hooks", "install", "--write", "--dir"])
        .arg(project.path())
        .output()
        .expect("hooks install");
    assert!(install.status.success(), "{install:?}");
    let after = run();
    let stdout = String::from_utf8_lossy(&after.stdout);
    assert!(
        stdout
            .contains("hooks              ok: Claude Code: clawmux hooks in .claude/settings.json"),
        "{stdout}"
    );
}

/// tmux is run through the config's command prefix; one that does not
/// run blocks serving, one that is not the tested release is a warning.
#[test]
fn doctor_checks_tmux_through_the_configured_command() {
    let home = home_with("[agent]\ncommand = \"sim\"\n[tmux]\ncommand = [\"/nonexistent/tmux\"]\n");
    let out = doctor_offline(home.path(), &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(
            "tmux               error: tmux is not usable: cannot run `/nonexistent/tmux`"
        ) && stdout.contains("sudo apt-get install tmux"),
        "{stdout}"
    );
    // `sh -c 'echo tmux 9.9' -V` stands for a prefix reaching another tmux.
    std::fs::write(
        home.path().join("config.toml"),
        "[agent]\ncommand = \"sim\"\n[tmux]\ncommand = [\"sh\", \"-c\", \"echo tmux 9.9\"]\n",
    )
    .expect("write");
    let out = doctor_offline(home.path(), &[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("tmux               warning: tmux 9.9 is not the release tested (3.3a)"),
        "{stdout}"
    );
}
