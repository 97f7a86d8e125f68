//! One project's tmux session and the agent pane in it: created on first use
//! (working directory = the workspace, fixed size), watched through the
//! server's watch session ([`super::watch_session`]), typed into literally.

use std::path::PathBuf;
use std::time::Duration;

/// A pane whose output backlog at tmux is older than this is paused and
/// resynchronised from its screen, instead of tmux dropping the client
/// (`%exit too far behind`). Agents print little; only a flood lags.
const PAUSE_AFTER: Duration = Duration::from_secs(5);

use bytes::Bytes;
use tokio::process::Command;

use super::config::TmuxConfig;
use crate::control::{Notification, PaneId, WindowId};
use crate::tmux::{
    Client, ClientConfig, ClientEvent, FloodLimits, Socket, Start, Subscription, TmuxCommand,
    TmuxError,
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
    #[error("session {0} does not exist")]
    NoSession(String),
    #[error("session {0} has no pane")]
    NoPane(String),
}

/// An attached agent pane: the server's shared control client, and this
/// pane's view of its events.
pub struct AgentPane {
    pub client: Client,
    pub pane: PaneId,
    /// The pane's window, as linked into the watch session.
    window: WindowId,
    events: Subscription,
}

impl PaneSpec {
    /// `session` on the configured server, with its pane size and flood
    /// guard; no agent or workspace yet.
    pub fn on_server(tmux: &TmuxConfig, session: String) -> PaneSpec {
        PaneSpec {
            program: tmux.command.clone(),
            socket: tmux.socket.clone(),
            session,
            workspace: PathBuf::new(),
            agent: String::new(),
            width: tmux.width,
            height: tmux.height,
            flood: tmux.flood_limits(),
        }
    }

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

    /// Creates the session running the agent (detached, fixed size), in
    /// the workspace.
    pub(super) async fn create_session(&self) -> Result<(), PaneError> {
        std::fs::create_dir_all(&self.workspace).map_err(|e| PaneError::Create {
            session: self.session.clone(),
            reason: format!("cannot create workspace {}: {e}", self.workspace.display()),
        })?;
        self.new_session(&[]).await
    }

    /// `new-session -d` of this spec's session, size and command, with
    /// `extra` options before the command.
    pub(super) async fn new_session(&self, extra: &[&str]) -> Result<(), PaneError> {
        let err = |reason: String| PaneError::Create {
            session: self.session.clone(),
            reason,
        };
        let (w, h) = (self.width.to_string(), self.height.to_string());
        let workspace = self.workspace.to_string_lossy();
        let out = self
            .tmux()
            .args(["new-session", "-d", "-s", &self.session, "-c", &workspace])
            .args(["-x", &w, "-y", &h])
            .args(extra)
            .arg(&self.agent)
            .output()
            .await
            .map_err(|e| err(e.to_string()))?;
        if !out.status.success() {
            return Err(err(String::from_utf8_lossy(&out.stderr).trim().to_string()));
        }
        Ok(())
    }

    /// Attaches a control client to this spec's session, with the
    /// daemon's settings: fixed size, `pause-after`, the flood guard.
    pub(super) async fn connect(&self) -> Result<Client, TmuxError> {
        let mut config = ClientConfig::new(Start::Attach {
            target: Some(format!("={}", self.session)),
        });
        config.program = self.program.clone();
        config.socket = Some(Socket::Name(self.socket.clone()));
        config.size = Some((self.width, self.height));
        config.pause_after = Some(PAUSE_AFTER);
        config.flood = self.flood;
        crate::tmux::connect(config).await
    }

    /// The session's first pane and its window, asked through `client`.
    pub(super) async fn first_pane(
        &self,
        client: &Client,
    ) -> Result<(WindowId, PaneId), PaneError> {
        let target = format!("={}", self.session);
        let list = TmuxCommand::new("list-panes").args([
            "-s",
            "-t",
            &target,
            "-F",
            "#{window_id} #{pane_id}",
        ]);
        let lines = client.command(list).await?;
        lines
            .first()
            .and_then(|l| std::str::from_utf8(l).ok())
            .and_then(|s| s.trim().split_once(' '))
            .and_then(|(w, p)| Some((w.parse().ok()?, p.parse().ok()?)))
            .ok_or_else(|| PaneError::NoPane(self.session.clone()))
    }
}

impl AgentPane {
    pub(super) fn new(
        client: Client,
        window: WindowId,
        pane: PaneId,
        events: Subscription,
    ) -> Self {
        AgentPane {
            client,
            pane,
            window,
            events,
        }
    }

    /// The next event about this pane (see [`Client::subscribe_pane`]).
    /// The pane's window leaving the watch session (it closed) ends the
    /// stream as [`TmuxError::PaneClosed`].
    pub async fn recv(&mut self) -> Option<ClientEvent> {
        let event = self.events.recv().await?;
        Some(self.ended_if_closed(event))
    }

    /// [`AgentPane::recv`] without waiting: `None` when nothing is queued.
    pub fn try_recv(&mut self) -> Option<ClientEvent> {
        let event = self.events.try_recv()?;
        Some(self.ended_if_closed(event))
    }

    /// Returns once tmux has answered a command sent now. The client
    /// publishes in stream order, so every event about the pane that tmux
    /// sent before the answer is then in this pane's queue.
    pub async fn sync(&self) -> Result<(), TmuxError> {
        let cmd = TmuxCommand::new("display-message")
            .arg("-p")
            .target_pane(self.pane)
            .arg("#{pane_id}");
        self.client.command(cmd).await.map(drop)
    }

    fn ended_if_closed(&self, event: ClientEvent) -> ClientEvent {
        match event {
            // tmux says `%unlinked-window-close` once the window has left
            // the watch session (so also when it closed), and, confusingly,
            // `%window-close` when it left another session but is still in
            // the watch session.
            ClientEvent::Notification(Notification::UnlinkedWindowClose { window })
                if window == self.window =>
            {
                ClientEvent::Ended(TmuxError::PaneClosed {
                    pane: self.pane,
                    window,
                })
            }
            event => event,
        }
    }

    /// Types `text` literally (`send-keys -l`), then Enter separately.
    pub async fn type_line(&self, text: &str) -> Result<(), TmuxError> {
        self.client.send_text(self.pane, text).await
    }

    /// Types `text` literally (`send-keys -l`), without Enter.
    pub async fn type_text(&self, text: &str) -> Result<(), TmuxError> {
        let cmd = TmuxCommand::new("send-keys")
            .target_pane(self.pane)
            .args(["-l", "--", text]);
        self.client.command(cmd).await.map(drop)
    }

    /// Presses Enter.
    pub async fn press_enter(&self) -> Result<(), TmuxError> {
        self.client.send_keys(self.pane, &["Enter"]).await
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
