//! `clawmux serve` killed at every point between taking a command and the
//! agent's first output (intent recorded, text typed, Enter pressed, and at
//! timed moments after the command is on disk), then started again: the
//! command reaches the agent exactly once, and no option of the permission
//! prompt it leads to is chosen until someone answers.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::crash::write_config;
use crate::support::bridge::until;
use crate::support::tmux::TmuxServer;

const COMMAND: &str = "/gsd:plan-phase 2";
/// The line the simulated agent prints once per plan-phase it runs.
const BANNER: &str = "━━━ GSD ► PLANNING PHASE 2";
const RESULT: &str = "Created 2 plans for phase 2";

/// `serve --console`: stdin held open, stdout collected; killed on drop.
struct ConsoleServe {
    child: Child,
    stdin: ChildStdin,
    out: Arc<Mutex<String>>,
}

impl ConsoleServe {
    fn start(home: &Path, crash_at: Option<&str>) -> ConsoleServe {
        let log = std::fs::File::options()
            .create(true)
            .append(true)
            .open(home.join("serve.log"))
            .unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_clawmux"));
        cmd.args(["serve", "--console"])
            .env("CLAWMUX_HOME", home)
            .env_remove("FEISHU_APP_ID")
            .env_remove("CLAWMUX_CRASH_AT")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log);
        if let Some(point) = crash_at {
            cmd.env("CLAWMUX_CRASH_AT", point);
        }
        let mut child = cmd.spawn().expect("clawmux runs");
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
        ConsoleServe { child, stdin, out }
    }

    fn say(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn printed(&self) -> String {
        self.out.lock().unwrap().clone()
    }

    async fn wait_printed(&self, needle: &str, times: usize) {
        let what = format!("{needle:?} printed {times} time(s)");
        until(|| self.printed().matches(needle).count() >= times, &what).await;
    }

    /// Waits until the process is gone (a crash point aborted it).
    async fn wait_exit(&mut self) {
        until(
            || matches!(self.child.try_wait(), Ok(Some(_))),
            "serve exits",
        )
        .await;
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ConsoleServe {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Every row the agent's pane printed (history and screen).
fn history(tmux: &TmuxServer) -> String {
    tmux.ok(&["capture-pane", "-p", "-J", "-S", "-", "-t", "cm-demo"])
}

fn count_lines(text: &str, line: &str) -> usize {
    text.lines().filter(|l| l.trim() == line).count()
}

/// Does the state file on disk hold the command's job?
fn job_on_disk(home: &Path) -> bool {
    let state = crate::support::state::read(home);
    let jobs = state["jobs"].as_array().cloned().unwrap_or_default();
    jobs.iter().any(|j| j["text"] == COMMAND)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_killed_anywhere_in_its_typing_reaches_the_agent_once() {
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let home = home.path();
    write_config(home, &tmux.socket);
    {
        let mut serve = ConsoleServe::start(home, None);
        serve.say("/gsd:new-project demo");
        serve.wait_printed("You said: /gsd:new-project", 1).await;
    }

    // Each round kills the daemon at one point, then a fresh daemon takes
    // over: named crash points, then SIGKILL at moments after the command
    // is on disk.
    let crash_points = ["typing_recorded", "text_typed", "enter_pressed"];
    let kill_after_ms = [0u64, 40, 120];
    let rounds = crash_points.len() + kill_after_ms.len();
    for round in 0..rounds {
        let point = crash_points.get(round).copied();
        let mut doomed = ConsoleServe::start(home, point);
        doomed.say(COMMAND);
        match point {
            Some(_) => doomed.wait_exit().await,
            None => {
                until(|| job_on_disk(home), "the command in the saved state").await;
                let ms = kill_after_ms[round - crash_points.len()];
                tokio::time::sleep(Duration::from_millis(ms)).await;
                doomed.kill();
            }
        }
        drop(doomed);

        let mut serve = ConsoleServe::start(home, None);
        serve.wait_printed("Do you want to proceed?", 1).await;
        // Nobody answered: the prompt still waits, no option was chosen.
        let screen = tmux.capture("cm-demo");
        assert!(
            screen.contains("Do you want to proceed?"),
            "round {round} ({point:?}): the prompt was answered by itself:\n{screen}"
        );
        assert_eq!(
            count_lines(&history(&tmux), RESULT),
            round,
            "round {round} ({point:?}): a result before the answer:\n{}",
            history(&tmux)
        );
        serve.say("/gsd:answer 1");
        serve.wait_printed(RESULT, 1).await;
        let seen = history(&tmux);
        assert_eq!(
            count_lines(&seen, BANNER),
            round + 1,
            "round {round} ({point:?}): the command reached the agent more or less than once:\n{seen}"
        );
        assert_eq!(
            seen.matches(&format!("{COMMAND}{COMMAND}")).count()
                + seen.matches(&format!("{COMMAND}/")).count(),
            0,
            "round {round}: the command was typed twice into one line:\n{seen}"
        );
        until(
            || !job_on_disk(home),
            "the finished command leaves the saved state",
        )
        .await;
    }
}
