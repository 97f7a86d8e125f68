//! One project's tmux session and the agent pane in it: created on first use
//! (working directory = the workspace, fixed size), watched through the
//! server's watch session ([`crate::bridge::panes::watch_session`]), typed into literally.

use std::path::PathBuf;
use std::time::Duration;

/// A pane whose output backlog at tmux is older than this is paused and
/// resynchronised from its screen, instead of tmux dropping the client
/// (`%exit too far behind`). Agents print little; only a flood lags.
const PAUSE_AFTER: Duration = Duration::from_secs(5);

use bytes::Bytes;
use tokio::process::Command;

use crate::bridge::config::{HostConfig, TmuxConfig};
use crate::control::{Notification, PaneId, SessionId, WindowId};
use crate::detect::MenuSelect;
use crate::gsd::host::ProjectHost;
use crate::store::state::{AdoptedPane, PaneIdentity, SessionName};
use crate::tmux::one_shot::{self, OneShotError, SSH_FAILED};
use crate::tmux::{
    Client, ClientConfig, ClientEvent, FloodLimits, Socket, Start, Subscription, TmuxCommand,
    TmuxError,
};

/// Between the presses of one answer. Keys arriving in one read are taken
/// as a paste by Claude Code (measured: `1` and `3` in one command ticked
/// nothing; in two commands, 10 ms apart, both; 50 ms apart, on a loaded
/// machine, sometimes neither).
pub const KEY_GAP: Duration = Duration::from_millis(250);

/// The variable that carries the agent's command line into its pane, so
/// that [`AGENT_LAUNCH`] is one fixed string nothing is quoted into.
macro_rules! agent_command_env {
    () => {
        "CLAWMUX_AGENT_COMMAND"
    };
}

/// What the pane runs: the agent's command line, by the pane's own shell
/// (tmux sets `SHELL` to it), without the variables that say "this is a CI
/// job". An agent that sees them goes headless: Gemini CLI with `CI=true`
/// or `GITHUB_ACTIONS=true` draws nothing and reads a prompt from stdin
/// (measured with 0.61.0). A tmux server started from a CI job, a
/// container or a test runner hands them to every pane, and clawmux's
/// panes are interactive terminals.
const AGENT_LAUNCH: &str = concat!(
    "exec env -u CI -u CONTINUOUS_INTEGRATION -u GITHUB_ACTIONS -u ",
    agent_command_env!(),
    " \"$SHELL\" -c \"$",
    agent_command_env!(),
    "\""
);

/// Where and how to run a project's agent.
#[derive(Debug, Clone)]
pub struct PaneSpec {
    /// tmux command prefix, e.g. `["tmux"]` or `["ssh", "host", "tmux"]`.
    pub program: Vec<String>,
    /// Whether `program` hands tmux's arguments to a remote shell (`ssh`):
    /// they are then shell-quoted so they arrive intact.
    pub remote_shell: bool,
    /// `-L` socket name; `None` is tmux's default server.
    pub socket: Option<String>,
    /// The `[hosts]` name of the server (`None`: the `[tmux]` one), for
    /// messages.
    pub host: Option<String>,
    pub session: SessionName,
    pub workspace: PathBuf,
    /// The agent command line run in the pane.
    pub agent: String,
    pub width: u16,
    pub height: u16,
    /// The flood guard's settings (`None`: stream every byte).
    pub flood: Option<FloodLimits>,
    /// A pane the user runs (in `session`), watched but never created,
    /// resized or killed: see [`crate::bridge::panes::watch_session`].
    pub adopted: Option<AdoptedPane>,
    /// How long the server has to answer one command (connecting included).
    pub timeout: Duration,
    /// The project's hook token, put in the agent's environment (see
    /// [`crate::hooks::token`]); `None` for panes clawmux does not start.
    pub hook_token: Option<String>,
}

/// Why an agent pane could not be reached or used. `Clone` and `Eq` so a
/// project's error can carry it to every waiting command and to tests.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PaneError {
    #[error("tmux: {0}")]
    Tmux(#[from] TmuxError),
    #[error("could not run tmux to create session {session}: {reason}")]
    Create {
        session: SessionName,
        reason: String,
    },
    #[error("cannot create the workspace {workspace}: {reason}")]
    Workspace { workspace: String, reason: String },
    #[error("session {0} does not exist")]
    NoSession(SessionName),
    #[error("session {0} has no pane")]
    NoPane(SessionName),
    /// The host's command (`ssh`) failed before tmux ran: its own message.
    #[error("host {host} is unreachable: {message}")]
    Unreachable { host: String, message: String },
    #[error(
        "host {host} printed more than {} MiB for one tmux command; nothing of it was used",
        one_shot::MAX_ONE_SHOT_OUTPUT / (1024 * 1024)
    )]
    TooMuchOutput { host: String },
    #[error("pane {pane} is not in a session clawmux may adopt: {reason}")]
    NotAdoptable { pane: String, reason: String },
    #[error(
        "pane {pane} is no longer the pane adopted as this project: {reason}. Nothing was typed or read; `/gsd:release` the project and `/gsd:adopt` the pane again"
    )]
    NotTheAdopted { pane: String, reason: AdoptedChange },
    /// A project's host is not (or no longer) in the config.
    #[error(transparent)]
    UnknownHost(#[from] super::hosts::UnknownHost),
    /// Keys were asked for while no pane is attached.
    #[error("the agent's pane is not open")]
    NotOpen,
}

/// tmux ran and refused a command: its message.
struct TmuxRefused(String);

/// An attached agent pane: the server's shared control client, and this
/// pane's view of its events.
pub struct AgentPane {
    pub client: Client,
    pub pane: PaneId,
    /// The pane's size when attached: the spec's for a pane clawmux made,
    /// the user's for an adopted one.
    pub width: u16,
    pub height: u16,
    /// The pane's window, as linked into the watch session (or, adopted,
    /// in the user's session its client is attached to).
    window: WindowId,
    adopted: bool,
    events: Subscription,
    /// The pane's process when attached ([`AgentPane::pinned`]): a key or
    /// screen read goes to the pane only while it still runs it.
    pid: Option<u32>,
}

impl PaneSpec {
    /// `session` on the configured server, with its pane size and flood
    /// guard; no agent or workspace yet.
    pub fn on_server(tmux: &TmuxConfig, session: SessionName) -> PaneSpec {
        PaneSpec {
            program: tmux.command.clone(),
            remote_shell: false,
            socket: Some(tmux.socket.clone()),
            host: None,
            session,
            workspace: PathBuf::new(),
            agent: String::new(),
            width: tmux.width,
            height: tmux.height,
            flood: tmux.flood_limits(),
            adopted: None,
            timeout: one_shot::ONE_SHOT_TIMEOUT,
            hook_token: None,
        }
    }

    /// `session` on host `name`: its command and socket, the `[tmux]` pane
    /// size and flood guard.
    pub fn on_host(
        name: &str,
        host: &HostConfig,
        tmux: &TmuxConfig,
        session: SessionName,
    ) -> PaneSpec {
        let socket = match host.socket.as_deref() {
            Some("") => None,
            Some(socket) => Some(socket.to_string()),
            None => Some(tmux.socket.clone()),
        };
        PaneSpec {
            program: host.command.clone(),
            remote_shell: host.remote_shell(),
            socket,
            host: Some(name.to_string()),
            timeout: host.timeout(),
            ..PaneSpec::on_server(tmux, session)
        }
    }

    /// The host's name for messages: `local` for the `[tmux]` server.
    pub fn host_name(&self) -> &str {
        self.host.as_deref().unwrap_or("local")
    }

    /// Where the pane's project files are, for reading GSD's on its host.
    pub fn project_host(&self) -> ProjectHost {
        ProjectHost {
            program: self.program.clone(),
            remote_shell: self.remote_shell,
            name: self.host_name().to_string(),
            timeout: self.timeout,
            workspace: self.workspace.clone(),
            agent_command: self.agent.clone(),
            agent: crate::agents::of_command(&self.agent).map(|a| a.name),
        }
    }

    /// The client configuration of this spec's server (socket, program),
    /// attaching to `session`.
    fn client_config(&self, target: String) -> ClientConfig {
        let mut config = ClientConfig::new(Start::Attach {
            target: Some(target),
        });
        config.program = self.program.clone();
        config.remote_shell = self.remote_shell;
        config.socket = self.socket.clone().map(Socket::Name);
        config.startup_timeout = self.timeout;
        config
    }

    /// A one-shot tmux command on this spec's server (`tmux -L S ARGS`,
    /// behind the host's prefix, quoted for its shell).
    fn tmux(&self, args: &[&str]) -> Result<Command, PaneError> {
        let mut tmux: Vec<&str> = Vec::with_capacity(args.len() + 3);
        // `-u`: tmux replaces a tab (any control byte) in its output with
        // `_` for a client it does not take for UTF-8, and ssh does not
        // pass `LANG` on unless the server accepts it; `locate`'s fields
        // are tab-separated.
        tmux.push("-u");
        if let Some(socket) = &self.socket {
            tmux.extend(["-L", socket]);
        }
        tmux.extend(args);
        let mut cmd = Command::new(&self.program[0]);
        cmd.args(&self.program[1..]);
        if self.remote_shell {
            for word in tmux {
                let word = crate::shell::quote(word).map_err(|e| PaneError::Unreachable {
                    host: self.host_name().to_string(),
                    message: e.to_string(),
                })?;
                cmd.arg(word.as_ref());
            }
        } else {
            cmd.args(tmux);
        }
        cmd.env("LANG", "C.UTF-8");
        Ok(cmd)
    }

    /// Runs a one-shot tmux command, within the spec's timeout and
    /// [`one_shot::MAX_ONE_SHOT_OUTPUT`]; its stdout, or the failure:
    /// the host unreachable (`ssh`'s own message, or no answer in time) or
    /// tmux refusing it.
    async fn run(&self, args: &[&str]) -> Result<Result<String, TmuxRefused>, PaneError> {
        let out = match one_shot::run(self.tmux(args)?, self.timeout).await {
            Ok(out) => out,
            Err(OneShotError::TooMuchOutput) => {
                return Err(PaneError::TooMuchOutput {
                    host: self.host_name().to_string(),
                });
            }
            Err(OneShotError::Spawn(e)) => {
                return Err(self.unreachable(format!("cannot run {}: {e}", self.program[0])));
            }
            Err(e @ OneShotError::TimedOut(_)) => return Err(self.unreachable(e.to_string())),
        };
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        if self.remote_shell && out.status.code() == Some(SSH_FAILED) {
            return Err(self.unreachable(stderr));
        }
        if out.status.success() {
            Ok(Ok(String::from_utf8_lossy(&out.stdout).into_owned()))
        } else {
            Ok(Err(TmuxRefused(stderr)))
        }
    }

    fn unreachable(&self, message: String) -> PaneError {
        PaneError::Unreachable {
            host: self.host_name().to_string(),
            message,
        }
    }

    /// Whether the session exists, or why the server could not be asked.
    pub async fn probe(&self) -> Result<bool, PaneError> {
        let target = format!("={}", self.session);
        Ok(self.run(&["has-session", "-t", &target]).await?.is_ok())
    }

    /// True when the session exists on the server (false also when the
    /// host cannot be reached: see [`PaneSpec::probe`]).
    pub async fn session_exists(&self) -> bool {
        self.probe().await.unwrap_or(false)
    }

    /// Creates the session running the agent (detached, fixed size), in
    /// the workspace. On a remote host the workspace is made there, by the
    /// pane's shell, before the agent starts.
    pub(super) async fn create_session(&self) -> Result<(), PaneError> {
        if self.adopted.is_some() {
            return Err(PaneError::NoSession(self.session.clone()));
        }
        let agent = format!(concat!(agent_command_env!(), "={}"), self.agent);
        let env = ["-e", agent.as_str()];
        if self.remote_shell {
            let workspace = self.workspace.to_string_lossy();
            let dir = crate::shell::quote(&workspace).map_err(|e| PaneError::Create {
                session: self.session.clone(),
                reason: e.to_string(),
            })?;
            let launch = format!("mkdir -p -- {dir} && cd -- {dir} && {AGENT_LAUNCH}");
            return self.new_session(&env, &launch).await;
        }
        std::fs::create_dir_all(&self.workspace).map_err(|e| PaneError::Workspace {
            workspace: self.workspace.display().to_string(),
            reason: e.to_string(),
        })?;
        self.new_session(&env, AGENT_LAUNCH).await
    }

    /// `new-session -d` of this spec's session and size running `command`,
    /// with `extra` options before it.
    pub(super) async fn new_session(&self, extra: &[&str], command: &str) -> Result<(), PaneError> {
        let (w, h) = (self.width.to_string(), self.height.to_string());
        let workspace = self.workspace.to_string_lossy();
        let mut args = vec!["new-session", "-d", "-s", self.session.as_str()];
        if !self.remote_shell {
            // A remote pane's shell makes its workspace and goes there.
            args.extend(["-c", &workspace]);
        }
        args.extend(["-x", &w, "-y", &h]);
        let env =
            (self.hook_token.as_ref()).map(|t| format!("{}={t}", crate::hooks::token::TOKEN_ENV));
        if let Some(env) = &env {
            args.extend(["-e", env]);
        }
        args.extend(extra);
        args.push(command);
        self.run(&args)
            .await?
            .map(drop)
            .map_err(|TmuxRefused(reason)| PaneError::Create {
                session: self.session.clone(),
                reason,
            })
    }

    /// Attaches a control client to this spec's session, with the
    /// daemon's settings: fixed size, `pause-after`, the flood guard.
    pub(super) async fn connect(&self) -> Result<Client, PaneError> {
        let mut config = self.client_config(format!("={}", self.session));
        config.size = Some((self.width, self.height));
        config.pause_after = Some(PAUSE_AFTER);
        config.flood = self.flood;
        crate::tmux::connect(config)
            .await
            .map_err(|e| self.client_error(e))
    }

    /// Attaches a control client to `session`, where an adopted pane is,
    /// that never sizes its windows (`ignore-size`, and no client size
    /// set): the user's own terminal keeps deciding.
    pub(super) async fn connect_adopted(&self, session: &str) -> Result<Client, PaneError> {
        let mut config = self.client_config(format!("={session}"));
        config.attach_flags = vec!["ignore-size".into()];
        config.pause_after = Some(PAUSE_AFTER);
        config.flood = self.flood;
        crate::tmux::connect(config)
            .await
            .map_err(|e| self.client_error(e))
    }

    /// A client that could not start because `ssh` failed is the host
    /// being unreachable, with ssh's message.
    fn client_error(&self, error: TmuxError) -> PaneError {
        match error {
            TmuxError::ProcessDied { status, stderr }
                if self.remote_shell && status.ends_with(&format!(" {SSH_FAILED}")) =>
            {
                self.unreachable(stderr.trim().to_string())
            }
            error => PaneError::Tmux(error),
        }
    }

    /// Where pane `target` is: its session, window and pane ids and size,
    /// asked with a one-shot command (no client attached yet).
    pub async fn locate(&self, target: &str) -> Result<PaneLocation, PaneError> {
        let format = "#{pid}\t#{session_id}\t#{window_id}\t#{pane_id}\t#{pane_pid}\t#{pane_width}\t#{pane_height}\t#{session_name}";
        let not = |reason: String| PaneError::NotAdoptable {
            pane: target.to_string(),
            reason,
        };
        let out = self
            .run(&["display-message", "-p", "-t", target, format])
            .await?
            .map_err(|TmuxRefused(reason)| not(reason))?;
        PaneLocation::parse(out.trim_end())
            .ok_or_else(|| not(format!("tmux answered {:?}", out.trim_end())))
    }

    /// `list-panes -a` of this spec's server, one line a pane:
    /// `SESSION:WINDOW.PANE %ID COMMAND WxH`, clawmux's own watch session left
    /// out; empty when no server runs.
    pub async fn list_panes(&self) -> Result<Vec<String>, PaneError> {
        let format = "#{session_name}:#{window_index}.#{pane_index} #{pane_id} #{pane_current_command} #{pane_width}x#{pane_height}";
        let out = self.run(&["list-panes", "-a", "-F", format]).await?;
        let watch = format!("{}:", SessionName::watch());
        Ok(out
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.starts_with(&watch))
            .map(str::to_string)
            .collect())
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

/// Where a pane is and how big it is (`display-message` of its target).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaneLocation {
    pub session: SessionName,
    pub window: WindowId,
    pub pane: PaneId,
    pub width: u16,
    pub height: u16,
    /// What tells this pane from one with its id on a restarted server.
    pub identity: PaneIdentity,
}

impl PaneLocation {
    fn parse(line: &str) -> Option<PaneLocation> {
        // The session's name last: it is the only field that may hold a tab.
        let mut f = line.splitn(8, '\t');
        let (server_pid, session_id) = (f.next()?.parse().ok()?, f.next()?.parse().ok()?);
        let window: WindowId = f.next()?.parse().ok()?;
        let (pane, pane_pid) = (f.next()?.parse().ok()?, f.next()?.parse().ok()?);
        let (width, height) = (f.next()?.parse().ok()?, f.next()?.parse().ok()?);
        Some(PaneLocation {
            session: f.next()?.parse().ok()?,
            window,
            pane,
            width,
            height,
            identity: PaneIdentity {
                server_pid,
                session_id,
                window_id: window,
                pane_pid,
            },
        })
    }

    /// The record of this pane, adopted.
    pub fn adopted(&self) -> AdoptedPane {
        AdoptedPane {
            session: self.session.clone(),
            pane: self.pane,
            identity: Some(self.identity),
        }
    }

    /// Whether this is the pane `adopted` recorded, or how it differs.
    pub fn is(&self, adopted: &AdoptedPane) -> Result<(), AdoptedChange> {
        let Some(was) = adopted.identity else {
            return Err(AdoptedChange::OldRecord);
        };
        let now = self.identity;
        if now.server_pid != was.server_pid {
            return Err(AdoptedChange::ServerRestarted {
                then: was.server_pid,
                now: now.server_pid,
            });
        }
        if now.pane_pid != was.pane_pid {
            return Err(AdoptedChange::OtherProgram {
                then: was.pane_pid,
                now: now.pane_pid,
            });
        }
        if (now.session_id, now.window_id) != (was.session_id, was.window_id) {
            return Err(AdoptedChange::Moved {
                then: (was.session_id, was.window_id),
                now: (now.session_id, now.window_id),
            });
        }
        Ok(())
    }
}

/// How the pane found under an adopted pane's id differs from the pane
/// adopted: keys typed there would reach another program.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdoptedChange {
    #[error("it was adopted by an older clawmux, which kept only its id")]
    OldRecord,
    #[error("its tmux server restarted (process {then} then, {now} now)")]
    ServerRestarted { then: u32, now: u32 },
    #[error("the pane runs another program (process {then} then, {now} now)")]
    OtherProgram { then: u32, now: u32 },
    #[error("it moved from window {} of session {} to window {} of session {}", then.1, then.0, now.1, now.0)]
    Moved {
        then: (SessionId, WindowId),
        now: (SessionId, WindowId),
    },
}

impl AgentPane {
    pub(super) fn new(
        client: Client,
        (window, pane): (WindowId, PaneId),
        (width, height): (u16, u16),
        events: Subscription,
    ) -> Self {
        AgentPane {
            client,
            pane,
            width,
            height,
            window,
            adopted: false,
            events,
            pid: None,
        }
    }

    /// Records the process the pane runs now: from here on every key and
    /// screen read first checks the pane still runs it, in its window.
    pub(super) async fn pinned(mut self) -> Result<Self, TmuxError> {
        let (pid, _) = self.identity().await?;
        self.pid = Some(pid);
        Ok(self)
    }

    /// The pane's process and window, as tmux has them now.
    async fn identity(&self) -> Result<(u32, WindowId), TmuxError> {
        let cmd = TmuxCommand::new("display-message")
            .arg("-p")
            .target_pane(self.pane)
            .arg("#{pane_pid} #{window_id}");
        let out = self.client.command(cmd).await?;
        let line = out.first().map(|l| String::from_utf8_lossy(l).into_owned());
        let parsed = line.as_deref().and_then(|l| {
            let (pid, window) = l.trim().split_once(' ')?;
            Some((pid.parse().ok()?, window.parse().ok()?))
        });
        parsed.ok_or_else(|| TmuxError::Command {
            command: "display-message #{pane_pid} #{window_id}".into(),
            message: format!("unreadable answer: {line:?}"),
        })
    }

    /// Before a key or a screen read: the pane runs the process it ran
    /// when attached, in the same window (tmux never gives a pane id out
    /// twice in a server's life, but `respawn-pane` runs another program
    /// under it, and `join-pane` moves it).
    async fn check(&self) -> Result<(), TmuxError> {
        let Some(was) = self.pid else { return Ok(()) };
        let (pid, window) = self.identity().await?;
        let why = if pid != was {
            format!("it runs another process ({was} when attached, {pid} now)")
        } else if window != self.window {
            format!("it moved from window {} to {window}", self.window)
        } else {
            return Ok(());
        };
        Err(TmuxError::PaneReplaced {
            pane: self.pane,
            why,
        })
    }

    /// Marks the pane as adopted: its window closing in the session its
    /// client is attached to (`%window-close`) ends it.
    pub(super) fn adopted(self) -> Self {
        AgentPane {
            adopted: true,
            ..self
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
            ClientEvent::Notification(Notification::WindowClose { window })
                if self.adopted && window == self.window =>
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
        self.check().await?;
        self.client.send_text(self.pane, text).await
    }

    /// Types `text` literally (`send-keys -l`), without Enter.
    pub async fn type_text(&self, text: &str) -> Result<(), TmuxError> {
        self.check().await?;
        let cmd = TmuxCommand::new("send-keys")
            .target_pane(self.pane)
            .args(["-l", "--", text]);
        self.client.command(cmd).await.map(drop)
    }

    /// Pastes `text` (several lines) as one paste: through a tmux buffer,
    /// bracketed (`paste-buffer -p`) when the program asked for bracketed
    /// paste, so its line breaks are text, not Enter presses. The buffer is
    /// the pane's own and is deleted after the paste.
    pub async fn paste_text(&self, text: &str) -> Result<(), TmuxError> {
        self.check().await?;
        let buffer = format!("clawmux-paste-{}", self.pane);
        let set = TmuxCommand::new("set-buffer").args(["-b", &buffer, "--", text]);
        self.client.command(set).await?;
        let paste = TmuxCommand::new("paste-buffer")
            .args(["-p", "-d", "-b", &buffer])
            .target_pane(self.pane);
        self.client.command(paste).await.map(drop)
    }

    /// Presses Enter.
    pub async fn press_enter(&self) -> Result<(), TmuxError> {
        self.check().await?;
        self.client.send_keys(self.pane, &["Enter"]).await
    }

    /// Answers a prompt: a one-character option key (`1`) selects and
    /// confirms by itself; a word (`approved`) is typed and submitted.
    /// Either way the key is typed literally, never read as a key name.
    /// A menu chosen with arrows or ticks (`select`) gets its presses
    /// instead, each on its own ([`KEY_GAP`] apart).
    pub async fn answer(&self, key: &str, select: MenuSelect) -> Result<(), TmuxError> {
        self.check().await?;
        if select != MenuSelect::Typed {
            let presses = select
                .presses(key)
                .ok_or_else(|| TmuxError::InvalidCommand {
                    command: format!("answer {key}"),
                    why: "not an option of this menu".into(),
                })?;
            for (i, press) in presses.iter().enumerate() {
                if i > 0 {
                    tokio::time::sleep(KEY_GAP).await;
                }
                self.client.send_keys(self.pane, &[press]).await?;
            }
            return Ok(());
        }
        if key.chars().count() == 1 {
            let cmd = TmuxCommand::new("send-keys")
                .target_pane(self.pane)
                .args(["-l", "--", key]);
            self.client.command(cmd).await.map(drop)
        } else {
            self.type_line(key).await
        }
    }

    /// Presses one tmux key by name (`y`, `Escape`): an option's own key
    /// read from the agent's dialog by its profile, never chat text.
    pub async fn press(&self, key: &str) -> Result<(), TmuxError> {
        self.check().await?;
        self.client.send_keys(self.pane, &[key]).await
    }

    /// Presses shift+tab: Claude Code's next permission mode.
    pub async fn cycle_mode(&self) -> Result<(), TmuxError> {
        self.check().await?;
        self.client.send_keys(self.pane, &["BTab"]).await
    }

    /// Presses the agent's interrupt keys (`Escape`, `C-c`), one by one,
    /// [`KEY_GAP`] apart: OpenCode takes a second Escape only as a second
    /// press.
    pub async fn interrupt(&self, keys: &[&str]) -> Result<(), TmuxError> {
        self.check().await?;
        for (i, key) in keys.iter().enumerate() {
            if i > 0 {
                tokio::time::sleep(KEY_GAP).await;
            }
            self.client.send_keys(self.pane, &[key]).await?;
        }
        Ok(())
    }

    /// Presses Escape (cancel / interrupt the agent).
    pub async fn escape(&self) -> Result<(), TmuxError> {
        self.check().await?;
        self.client.send_keys(self.pane, &["Escape"]).await
    }

    /// Sends named keys (`/gsd:keys`), in order, as one tmux command.
    pub async fn send_named_keys(&self, keys: &[super::keys::NamedKey]) -> Result<(), TmuxError> {
        self.check().await?;
        let names: Vec<&str> = keys.iter().map(|k| k.tmux_name()).collect();
        self.client.send_keys(self.pane, &names).await
    }

    /// The visible screen as tmux has it (for resyncs and timeout cards).
    pub async fn capture(&self) -> Result<Bytes, TmuxError> {
        self.check().await?;
        self.client.capture_screen(self.pane).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn location(line: &str) -> Option<PaneLocation> {
        PaneLocation::parse(line)
    }

    /// GSD's files are looked for where the pane's agent keeps them, so
    /// the project host names the agent its command line starts.
    #[test]
    fn the_project_host_names_the_agent_and_its_host() {
        let mut spec = PaneSpec::on_server(&Default::default(), crate::store::ids::session("s"));
        spec.agent = "env HOME=/h CODEX_HOME=/h/cx codex -a never".into();
        let host = spec.project_host();
        assert_eq!(host.agent, Some("codex"));
        assert_eq!(host.agent_command, spec.agent);
        assert_eq!(host.name, "local");
        spec.agent = "~/bin/cc-work.sh".into();
        spec.host = Some("box".into());
        let host = spec.project_host();
        assert_eq!(host.agent, None);
        assert_eq!(host.name, "box");
    }

    #[test]
    fn pane_locations_parse_strictly() {
        let identity = PaneIdentity {
            server_pid: 41,
            session_id: SessionId(2),
            window_id: WindowId(3),
            pane_pid: 99,
        };
        // A session name holding a tab (or anything else tmux's target
        // syntax or clawmux's names do not use) is no pane of ours.
        assert_eq!(location("41\t$2\t@3\t%7\t99\t80\t24\tmy\twork"), None);
        assert_eq!(
            location("41\t$2\t@3\t%7\t99\t80\t24\tmy_work"),
            Some(PaneLocation {
                session: crate::store::ids::session("my_work"),
                window: WindowId(3),
                pane: PaneId(7),
                width: 80,
                height: 24,
                identity,
            })
        );
        for bad in [
            "",
            "41\t$2\t@3\t%7\t99\t80\t24",
            "41\t2\t@3\t%7\t99\t80\t24\twork",
            "x\t$2\t@3\t%7\t99\t80\t24\twork",
            "41\t$2\t@3\t%7\t\t80\t24\twork",
        ] {
            assert_eq!(location(bad), None, "{bad:?}");
        }
    }

    /// The pane under an adopted id is the adopted one only with the same
    /// server, process, session and window.
    #[test]
    fn an_adopted_pane_is_told_from_another_with_its_id() {
        let found = location("41\t$2\t@3\t%7\t99\t80\t24\twork").unwrap();
        let adopted = found.adopted();
        assert_eq!(found.is(&adopted), Ok(()));
        let with = |change: fn(&mut PaneIdentity)| {
            let mut identity = found.identity;
            change(&mut identity);
            AdoptedPane {
                identity: Some(identity),
                ..adopted.clone()
            }
        };
        let restarted = found.is(&with(|i| i.server_pid = 40));
        assert_eq!(
            restarted,
            Err(AdoptedChange::ServerRestarted { then: 40, now: 41 })
        );
        let respawned = found.is(&with(|i| i.pane_pid = 98));
        assert_eq!(
            respawned,
            Err(AdoptedChange::OtherProgram { then: 98, now: 99 })
        );
        let moved = found.is(&with(|i| i.window_id = WindowId(1))).unwrap_err();
        assert!(matches!(moved, AdoptedChange::Moved { .. }), "{moved:?}");
        assert_eq!(
            moved.to_string(),
            "it moved from window @1 of session $2 to window @3 of session $2"
        );
        let old = AdoptedPane {
            identity: None,
            ..adopted
        };
        assert_eq!(found.is(&old), Err(AdoptedChange::OldRecord));
    }

    #[test]
    fn host_specs_quote_for_the_remote_shell() {
        let tmux = TmuxConfig::default();
        let host = HostConfig {
            command: vec!["ssh".into(), "box".into(), "tmux".into()],
            socket: None,
            workspace_root: None,
            remote_shell: None,
            timeout_secs: None,
        };
        let spec = PaneSpec::on_host("box", &host, &tmux, crate::store::ids::session("cm-web"));
        assert!(spec.remote_shell);
        assert_eq!(spec.host_name(), "box");
        let cmd = spec.tmux(&["has-session", "-t", "=cm-web"]).unwrap();
        let args: Vec<_> = cmd.as_std().get_args().collect();
        assert_eq!(
            args,
            [
                "box",
                "tmux",
                "-u",
                "-L",
                "clawmux",
                "has-session",
                "-t",
                "'=cm-web'"
            ]
        );
        let cmd = spec.tmux(&["-t", "=$(id) it's"]).unwrap();
        let args: Vec<_> = (cmd.as_std().get_args())
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            crate::shell::split(&args[2..].join(" ")).unwrap(),
            ["-u", "-L", "clawmux", "-t", "=$(id) it's"]
        );
        let err = spec.tmux(&["has-session", "-t", "a\0b"]).unwrap_err();
        assert!(err.to_string().contains("NUL byte"), "{err}");
        let default_server = HostConfig {
            command: vec!["tmux".into()],
            socket: Some(String::new()),
            ..host
        };
        let spec = PaneSpec::on_host(
            "desk",
            &default_server,
            &tmux,
            crate::store::ids::session("work"),
        );
        let cmd = spec.tmux(&["list-panes"]).unwrap();
        assert_eq!(
            cmd.as_std().get_args().collect::<Vec<_>>(),
            ["-u", "list-panes"]
        );
    }
}
