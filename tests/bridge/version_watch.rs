//! `clawmux serve` noticing that a project's Claude Code is a release
//! nobody tested: a fake `claude` on its PATH says `2.1.999 (Claude Code)`
//! to `--version` (and runs the simulated agent in the project's pane, but
//! refuses to start against the self-check's fake model, noting each such
//! start). The self-check runs once, fails, and the operator (event log,
//! stderr) and the project's chat (a card) are told so, with how to pin a
//! tested release and how to record the pane; after a restart on the same
//! state that project hears nothing more, and another project on the same
//! release is told without a second self-check.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};

use clawmux::agents::claude::NEWEST_TESTED;
use clawmux::store::event_log::EventRecord;
use clawmux::store::log_read;

use crate::support::bridge::until;
use crate::support::tmux::TmuxServer;

/// The release the fake `claude` says it is.
const UNTESTED: &str = "2.1.999";
const CARD_TITLE: &str = "== Claude Code 2.1.999 is not a tested release ==";

/// `serve --console` with the fake `claude` first on its PATH; killed on
/// drop.
struct Serve {
    child: Child,
    stdin: ChildStdin,
    out: Arc<Mutex<String>>,
}

impl Serve {
    fn start(home: &Path, bin: &Path) -> Serve {
        let err = std::fs::File::options()
            .create(true)
            .append(true)
            .open(home.join("serve.err"))
            .unwrap();
        let path = format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut child = Command::new(env!("CARGO_BIN_EXE_clawmux"))
            .args(["serve", "--console"])
            .env("CLAWMUX_HOME", home)
            .env("PATH", path)
            .env("LANG", "C.UTF-8")
            .env_remove("LC_ALL")
            .env_remove("LC_MESSAGES")
            .env_remove("CLAWMUX_CLAUDE")
            .env_remove("ANTHROPIC_BASE_URL")
            .env_remove("FEISHU_APP_ID")
            .env_remove("FEISHU_APP_SECRET")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(err)
            .spawn()
            .expect("clawmux serve");
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let out = Arc::new(Mutex::new(String::new()));
        let sink = out.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let mut out = sink.lock().unwrap();
                out.push_str(&line);
                out.push('\n');
            }
        });
        Serve { child, stdin, out }
    }

    fn say(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn printed(&self) -> String {
        self.out.lock().unwrap().clone()
    }

    async fn wait_printed(&self, needle: &str) {
        until(
            || self.printed().contains(needle),
            &format!("{needle:?} printed"),
        )
        .await;
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The fake `claude`: a release nobody tested, the simulated agent in a
/// project's pane, and nothing at all against a fake model (the
/// self-check's environment names one).
fn fake_claude(bin: &Path) {
    std::fs::create_dir_all(bin).unwrap();
    let script = format!(
        r#"#!/bin/sh
if [ "$1" = --version ]; then echo "{UNTESTED} (Claude Code)"; exit 0; fi
if [ -n "$ANTHROPIC_BASE_URL" ]; then echo started >> '{checks}'; echo "fake claude: no model here" >&2; exit 3; fi
exec '{clawmux}' sim-agent
"#,
        clawmux = env!("CARGO_BIN_EXE_clawmux"),
        checks = self_checks_file(bin).display(),
    );
    let path = bin.join("claude");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Where the fake `claude` notes each self-check that started it.
fn self_checks_file(bin: &Path) -> std::path::PathBuf {
    bin.join("self-checks")
}

/// How many self-checks started the fake `claude`.
fn self_checks(bin: &Path) -> usize {
    std::fs::read_to_string(self_checks_file(bin))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

fn write_config(home: &Path, socket: &str) {
    let config = format!(
        "workspace_root = {ws:?}\n[tmux]\nsocket = {socket:?}\nwidth = 120\nheight = 40\n\
         [agent]\ncommand = \"claude\"\nprofile = \"gsd\"\n",
        ws = home.join("ws").display().to_string(),
    );
    std::fs::write(home.join("config.toml"), config).unwrap();
}

/// The event log's records of `kind`.
fn records(home: &Path, kind: &str) -> Vec<EventRecord> {
    let records = log_read::read_all(home)
        .map(|l| l.records)
        .unwrap_or_default();
    records.into_iter().filter(|r| r.kind == kind).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untested_claude_release_is_self_checked_and_told_once() {
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    let bin = home.join("bin");
    fake_claude(&bin);
    write_config(home, &tmux.socket);
    {
        let mut serve = Serve::start(home, &bin);
        serve.say("/gsd:new-project demo");
        serve.wait_printed(CARD_TITLE).await;
        let printed = serve.printed();
        let card = &printed[printed.find(CARD_TITLE).unwrap()..];
        let card = &card[..card.find("└─").unwrap_or(card.len())];
        for needle in [
            "**demo** runs Claude Code 2.1.999; clawmux is tested with 2.1.197, 2.1.332, 2.1.337.",
            "The self-check could not finish: ",
            &format!("`npm install -g @anthropic-ai/claude-code@{NEWEST_TESTED}`"),
            "`DISABLE_AUTOUPDATER=1`",
            &format!(
                "`clawmux record -L {} -t cm-demo -o claude-2.1.999.rec`",
                tmux.socket
            ),
        ] {
            assert!(card.contains(needle), "{needle:?} not in the card:\n{card}");
        }
        let records = records(home, "agent_untested");
        let [record] = &records[..] else {
            panic!("{records:#?}")
        };
        assert_eq!(record.field("project"), Some("demo"));
        assert_eq!(record.field("version"), Some(UNTESTED));
        assert!(record.field("error").is_some(), "{record:?}");
        let err = std::fs::read_to_string(home.join("serve.err")).unwrap();
        assert!(
            err.contains(
                "clawmux: project demo runs Claude Code 2.1.999, not a tested release (2.1.197, 2.1.332, 2.1.337); the self-check did not finish: "
            ),
            "{err}"
        );
        assert_eq!(self_checks(&bin), 1);
        // The project works meanwhile (the simulated agent answered).
        serve.wait_printed("You said: /gsd:new-project").await;
    }

    // The same release again, after a restart: its release is read again
    // (and logged), but nobody is told twice.
    let mut serve = Serve::start(home, &bin);
    serve.say("/gsd:use demo");
    serve.say("hello again");
    serve.wait_printed("You said: hello again").await;
    until(
        || records(home, "agent_version").len() == 2,
        "the release read again after the restart",
    )
    .await;
    let versions = records(home, "agent_version");
    assert!(
        (versions.iter()).all(|r| r.field("version") == Some(UNTESTED)
            && r.fields.get("tested") == Some(&serde_json::Value::Bool(false))),
        "{versions:#?}"
    );
    assert!(!serve.printed().contains(CARD_TITLE), "{}", serve.printed());
    assert_eq!(records(home, "agent_untested").len(), 1);

    // Another project on the same release: told what the one self-check
    // found, without a second one.
    serve.say("/gsd:new-project web");
    serve.wait_printed(CARD_TITLE).await;
    serve.wait_printed("**web** runs Claude Code 2.1.999").await;
    let told: Vec<Option<String>> = (records(home, "agent_untested").iter())
        .map(|r| r.field("project").map(str::to_owned))
        .collect();
    assert_eq!(told, [Some("demo".into()), Some("web".into())]);
    assert_eq!(self_checks(&bin), 1);
}
