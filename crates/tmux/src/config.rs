//! How to start a control client: program or command prefix, socket, and
//! whether to create a session or attach to one.

use std::path::PathBuf;
use std::time::Duration;

use super::TmuxError;
use super::flood::FloodLimits;

/// Which tmux server to talk to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Socket {
    /// `-L NAME`: a named socket in tmux's socket directory.
    Name(String),
    /// `-S PATH`: a socket path.
    Path(PathBuf),
}

impl Socket {
    /// tmux's option naming it: `-L NAME` or `-S PATH`.
    pub fn args(&self) -> [String; 2] {
        match self {
            Socket::Name(name) => ["-L".into(), name.clone()],
            Socket::Path(path) => ["-S".into(), path.to_string_lossy().into_owned()],
        }
    }
}

/// A session created by the control client itself (`new-session`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewSession {
    /// `-s NAME`.
    pub name: Option<String>,
    /// `-c DIR`: the first pane's working directory.
    pub cwd: Option<PathBuf>,
    /// The first pane's shell command (tmux runs it with `sh -c`).
    pub command: Option<String>,
}

/// What the control client does when it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// `new-session`: create a session and attach to it.
    NewSession(NewSession),
    /// `attach-session [-t TARGET]`: attach to an existing session.
    Attach { target: Option<String> },
}

/// Everything [`connect`](super::connect) needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientConfig {
    /// The program and its leading arguments: `["tmux"]`, or a prefix such as
    /// `["ssh", "host", "tmux"]` for a remote server.
    pub program: Vec<String>,
    /// Whether the prefix hands tmux's arguments to a POSIX shell (as `ssh`
    /// does): they are then shell-quoted so they arrive intact.
    pub remote_shell: bool,
    /// `-L` or `-S`; `None` is tmux's default server.
    pub socket: Option<Socket>,
    /// `-f FILE` (tests use `/dev/null` to skip the user's configuration).
    pub config_file: Option<PathBuf>,
    pub start: Start,
    /// The control client's size (`refresh-client -C WxH`), so line
    /// wrapping in the panes is stable.
    pub size: Option<(u16, u16)>,
    /// `pause-after`: a pane whose backlog is older than this is paused and
    /// later resynchronised (`None`: tmux's default, `%exit too far behind`
    /// after 300 s). tmux counts whole seconds; this is rounded up.
    pub pause_after: Option<Duration>,
    /// Watch a pane that writes faster than this through snapshots of its
    /// screen instead of streaming it (see [`FloodLimits`]); `None`
    /// streams every byte whatever it costs the pane.
    pub flood: Option<FloodLimits>,
    /// How long start-up may take before [`TmuxError::StartupTimeout`](super::TmuxError).
    pub startup_timeout: Duration,
    /// Client flags given to `attach-session -f` (e.g. `ignore-size`, so
    /// the client never changes the size of the session's windows).
    pub attach_flags: Vec<String>,
}

/// Default start-up bound: long enough for an `ssh` handshake on a slow
/// link, short enough that a wrong host never hangs the caller.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(15);

impl ClientConfig {
    /// Local `tmux`, default server, the given start.
    pub fn new(start: Start) -> Self {
        ClientConfig {
            program: vec!["tmux".into()],
            remote_shell: false,
            socket: None,
            config_file: None,
            start,
            size: None,
            pause_after: None,
            flood: None,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            attach_flags: Vec::new(),
        }
    }

    /// Attach to a running session (`None`: tmux picks the most recent).
    pub fn attach(target: Option<&str>) -> Self {
        Self::new(Start::Attach {
            target: target.map(str::to_string),
        })
    }

    /// Create a session.
    pub fn new_session(session: NewSession) -> Self {
        Self::new(Start::NewSession(session))
    }

    /// The program and its full argument list; an error for a word the
    /// host's shell cannot carry (a NUL byte).
    pub(crate) fn argv(&self) -> Result<Vec<String>, TmuxError> {
        let mut tmux: Vec<String> = vec!["-u".into()];
        if let Some(socket) = &self.socket {
            tmux.extend(socket.args());
        }
        if let Some(file) = &self.config_file {
            tmux.extend(["-f".into(), file.to_string_lossy().into_owned()]);
        }
        tmux.push("-C".into());
        match &self.start {
            Start::NewSession(s) => {
                tmux.push("new-session".into());
                if let Some(name) = &s.name {
                    tmux.extend(["-s".into(), name.clone()]);
                }
                if let Some(cwd) = &s.cwd {
                    tmux.extend(["-c".into(), cwd.to_string_lossy().into_owned()]);
                }
                if let Some((w, h)) = self.size {
                    tmux.extend(["-x".into(), w.to_string(), "-y".into(), h.to_string()]);
                }
                tmux.extend(s.command.clone());
            }
            Start::Attach { target } => {
                tmux.push("attach-session".into());
                if !self.attach_flags.is_empty() {
                    tmux.extend(["-f".into(), self.attach_flags.join(",")]);
                }
                if let Some(target) = target {
                    tmux.extend(["-t".into(), target.clone()]);
                }
            }
        }
        if self.remote_shell {
            tmux = (tmux.iter())
                .map(|a| clawmux_text::shell::quote(a).map(String::from))
                .collect::<Result<_, _>>()
                .map_err(|e| TmuxError::Spawn {
                    program: self.program.join(" "),
                    reason: e.to_string(),
                })?;
        }
        Ok(self.program.iter().cloned().chain(tmux).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_local_and_remote_argv() {
        let mut config = ClientConfig::new_session(NewSession {
            name: Some("p".into()),
            cwd: None,
            command: Some("sh -c 'echo hi'".into()),
        });
        config.socket = Some(Socket::Name("s".into()));
        config.size = Some((120, 40));
        assert_eq!(
            config.argv().unwrap(),
            [
                "tmux",
                "-u",
                "-L",
                "s",
                "-C",
                "new-session",
                "-s",
                "p",
                "-x",
                "120",
                "-y",
                "40",
                "sh -c 'echo hi'"
            ]
        );
        let mut remote = ClientConfig::attach(Some("p"));
        remote.program = vec!["ssh".into(), "host".into(), "tmux".into()];
        remote.remote_shell = true;
        assert_eq!(
            remote.argv().unwrap(),
            [
                "ssh",
                "host",
                "tmux",
                "-u",
                "-C",
                "attach-session",
                "-t",
                "p"
            ]
        );
        // What the remote shell would expand is quoted for it.
        let mut hostile = ClientConfig::attach(Some("=$(id) it's"));
        hostile.program = vec!["ssh".into(), "host".into(), "tmux".into()];
        hostile.remote_shell = true;
        let argv = hostile.argv().unwrap();
        assert_eq!(
            clawmux_text::shell::split(&argv[3..].join(" ")).unwrap(),
            ["-u", "-C", "attach-session", "-t", "=$(id) it's"]
        );
        assert!(!argv.last().unwrap().starts_with("=$("), "{argv:?}");
        // A NUL cannot reach the host's shell: refused, not cut.
        let mut nul = ClientConfig::attach(Some("p\0q"));
        nul.program = vec!["ssh".into(), "host".into(), "tmux".into()];
        nul.remote_shell = true;
        let err = nul.argv().unwrap_err().to_string();
        assert!(err.contains("NUL byte"), "{err}");
        let mut adopt = ClientConfig::attach(Some("=work"));
        adopt.attach_flags = vec!["ignore-size".into()];
        assert_eq!(
            adopt.argv().unwrap(),
            [
                "tmux",
                "-u",
                "-C",
                "attach-session",
                "-f",
                "ignore-size",
                "-t",
                "=work"
            ]
        );
    }
}
