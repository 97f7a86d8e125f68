//! One project's tmux session and the agent pane in it: created on first use
//! (working directory = the workspace, fixed size), attached in control mode,
//! typed into literally.

use std::path::PathBuf;
use std::time::Duration;

/// A pane whose output backlog at tmux is older than this is paused and
/// resynchronised from its screen, instead of tmux dropping the client
/// (`%exit too far behind`). Agents print little; only a flood lags.
const PAUSE_AFTER: Duration = Duration::from_secs(5);

use bytes::Bytes;
use tokio::process::Command;

use crate::control::PaneId;
use crate::tmux::{
    Client, ClientConfig, FloodLimits, Socket, Start, Subscription, TmuxCommand, TmuxError,
};

/// Where and how to run a project's agent.
#[derive(Debug, Clone)]
pub struct PaneSpec {
    /// tmux command prefix, e.g. `["tmux"]` or `["ssh", "host", "tmux"]`.
    pub program: Vec<String>,
    /// `-L` socket name.
    pub socket: String,
    pub session: String,
    pub workspace: PathBuf,
    /// The agent command line run in the pane.
    pub agent: String,
    pub width: u16,
    pub height: u16,
    /// The flood guard's settings (`None`: stream every byte).
    pub flood: Option<FloodLimits>,
}

#[derive(Debug, thiserror::Error)]
pub enum PaneError {
    #[error("tmux: {0}")]
    Tmux(#[from] TmuxError),
    #[error("could not run tmux to create session {session}: {reason}")]
    Create { session: String, reason: String },
    #[error("session {0} has no pane")]
    NoPane(String),
}

/// An attached agent pane.
pub struct AgentPane {
    pub client: Client,
    pub pane: PaneId,
    pub events: Subscription,
}

impl PaneSpec {
    fn tmux(&self) -> Command {
        let mut cmd = Command::new(&self.program[0]);
        cmd.args(&self.program[1..])
            .args(["-L", &self.socket])
            .env("LANG", "C.UTF-8");
        cmd.kill_on_drop(true);
        cmd
    }

    /// True when the session exists on the server.
    pub async fn session_exists(&self) -> bool {
        let target = format!("={}", self.session);
        let out = self
            .tmux()
            .args(["has-session", "-t", &target])
            .output()
            .await;
        out.is_ok_and(|o| o.status.success())
    }

    /// Creates the session running the agent (detached, fixed size).
    pub async fn create_session(&self) -> Result<(), PaneError> {
        let err = |reason: String| PaneError::Create {
            session: self.session.clone(),
            reason,
        };
        std::fs::create_dir_all(&self.workspace).map_err(|e| {
            err(format!(
                "cannot create workspace {}: {e}",
                self.workspace.display()
            ))
        })?;
        let (w, h) = (self.width.to_string(), self.height.to_string());
        let workspace = self.workspace.to_string_lossy();
        let out = self
            .tmux()
            .args([
                "new-session",
                "-d",
                "-s",
                &self.session,
                "-c",
                &workspace,
                "-x",
                &w,
                "-y",
                &h,
            ])
            .arg(&self.agent)
            .output()
            .await
            .map_err(|e| err(e.to_string()))?;
        if !out.status.success() {
            return Err(err(String::from_utf8_lossy(&out.stderr).trim().to_string()));
        }
        Ok(())
    }

    /// Attaches in control mode and finds the agent pane.
    pub async fn attach(&self) -> Result<AgentPane, PaneError> {
        let mut config = ClientConfig::new(Start::Attach {
            target: Some(format!("={}", self.session)),
        });
        config.program = self.program.clone();
        config.socket = Some(Socket::Name(self.socket.clone()));
        config.size = Some((self.width, self.height));
        config.pause_after = Some(PAUSE_AFTER);
        config.flood = self.flood;
        let client = crate::tmux::connect(config).await?;
        let events = client.subscribe();
        let target = format!("={}", self.session);
        let lines = client
            .command(TmuxCommand::new("list-panes").args(["-s", "-t", &target, "-F", "#{pane_id}"]))
            .await?;
        let pane = lines
            .first()
            .and_then(|l| std::str::from_utf8(l).ok())
            .and_then(|s| s.trim().parse::<PaneId>().ok())
            .ok_or_else(|| PaneError::NoPane(self.session.clone()))?;
        Ok(AgentPane {
            client,
            pane,
            events,
        })
    }
}

impl AgentPane {
    /// Types `text` literally (`send-keys -l`), then Enter separately.
    pub async fn type_line(&self, text: &str) -> Result<(), TmuxError> {
        self.client.send_text(self.pane, text).await
    }

    /// Answers a prompt: a one-character option key (`1`) selects and
    /// confirms by itself; a word (`approved`) is typed and submitted.
    /// Either way the key is typed literally, never read as a key name.
    pub async fn answer(&self, key: &str) -> Result<(), TmuxError> {
        if key.chars().count() == 1 {
            let cmd = TmuxCommand::new("send-keys")
                .target_pane(self.pane)
                .args(["-l", "--", key]);
            self.client.command(cmd).await.map(drop)
        } else {
            self.type_line(key).await
        }
    }

    /// Presses Escape (cancel / interrupt the agent).
    pub async fn escape(&self) -> Result<(), TmuxError> {
        self.client.send_keys(self.pane, &["Escape"]).await
    }

    /// The visible screen as tmux has it (for resyncs and timeout cards).
    pub async fn capture(&self) -> Result<Bytes, TmuxError> {
        self.client.capture_screen(self.pane).await
    }
}
