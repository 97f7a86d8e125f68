//! The tmux servers projects run on: the `[tmux]` one ("local") and every
//! `[hosts.NAME]` (usually another machine behind `ssh … tmux`), each with
//! one watch session and so one control client shared by that server's
//! projects; their workspace roots; reconnecting to a host with backoff;
//! and what `/gsd:sessions` lists.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::bridge::config::Config;
use crate::bridge::panes::agent_pane::{PaneError, PaneSpec};
use crate::bridge::panes::watch_session::WatchSession;
use crate::store::state::{AdoptedPane, SessionName};

/// First wait before probing an unreachable host again.
const RECONNECT_FIRST: Duration = Duration::from_millis(250);
/// Longest wait between two probes: a host back up is noticed within this.
const RECONNECT_MAX: Duration = Duration::from_secs(8);
/// Probes after the first failure before a command's host is given up on
/// (about 30 s in all): long enough for a dropped connection or a
/// restarting sshd, short enough that the chat hears of a dead host soon.
const RECONNECT_ATTEMPTS: usize = 7;
/// Panes listed per server by `/gsd:sessions` at most (a card has limits;
/// a server with more is cut with a note).
pub const MAX_LISTED_PANES: usize = 100;

/// A host name that is not configured.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no host {host:?} is configured; known hosts: {known}")]
pub struct UnknownHost {
    pub host: String,
    pub known: String,
}

/// Every server's watch session, by host (`None`: the `[tmux]` server).
pub struct Hosts {
    local: Arc<WatchSession>,
    remote: BTreeMap<String, Arc<WatchSession>>,
    roots: BTreeMap<String, PathBuf>,
    local_root: PathBuf,
}

impl Hosts {
    /// One watch session per configured server; nothing is contacted yet.
    pub fn new(config: &Config) -> Hosts {
        let local_root = config.workspace_root();
        let mut remote = BTreeMap::new();
        let mut roots = BTreeMap::new();
        for (name, host) in &config.hosts {
            let server = PaneSpec::on_host(name, host, &config.tmux, SessionName::watch());
            remote.insert(name.clone(), Arc::new(WatchSession::on(server)));
            let root = host
                .workspace_root
                .as_ref()
                .map(PathBuf::from)
                .unwrap_or_else(|| local_root.clone());
            roots.insert(name.clone(), root);
        }
        Hosts {
            local: Arc::new(WatchSession::new(&config.tmux)),
            remote,
            roots,
            local_root,
        }
    }

    /// The watch session of `host`'s server.
    pub fn watch(&self, host: Option<&str>) -> Result<Arc<WatchSession>, UnknownHost> {
        match host {
            None => Ok(self.local.clone()),
            Some(name) => self
                .remote
                .get(name)
                .cloned()
                .ok_or_else(|| self.unknown(name)),
        }
    }

    /// Where `host`'s projects get their workspaces, as that host sees it.
    pub fn workspace_root(&self, host: Option<&str>) -> Result<PathBuf, UnknownHost> {
        match host {
            None => Ok(self.local_root.clone()),
            Some(name) => self
                .roots
                .get(name)
                .cloned()
                .ok_or_else(|| self.unknown(name)),
        }
    }

    /// Whether `host` is reached through a remote shell (`ssh`): its
    /// workspaces are made there, not here.
    pub fn is_remote(&self, host: &str) -> bool {
        self.remote.get(host).is_some_and(|w| w.is_remote())
    }

    fn unknown(&self, host: &str) -> UnknownHost {
        let known: Vec<&str> = self.remote.keys().map(String::as_str).collect();
        UnknownHost {
            host: host.to_string(),
            known: if known.is_empty() {
                "none (add a [hosts.NAME] table to the config)".into()
            } else {
                known.join(", ")
            },
        }
    }

    /// At start-up: attaches the local watch session if an earlier run left
    /// it (see [`WatchSession::resume`]). Hosts are contacted on first use,
    /// so an unreachable one never holds the daemon's start up.
    pub async fn resume(&self) {
        self.local.resume().await;
    }

    /// Every server, local first: its host name and watch session.
    pub fn all(&self) -> impl Iterator<Item = (Option<&str>, &Arc<WatchSession>)> {
        std::iter::once((None, &self.local)).chain(
            self.remote
                .iter()
                .map(|(name, watch)| (Some(name.as_str()), watch)),
        )
    }

    /// `/gsd:sessions`: each server's panes (or why it could not be asked),
    /// as markdown. Every server is asked at once, so a host that does not
    /// answer (each ask is bounded, see [`PaneSpec::list_panes`]) delays
    /// the list by its own time only and hides no other host's panes.
    pub async fn sessions_markdown(&self) -> String {
        let asks = self.all().map(|(host, watch)| async move {
            let spec = watch.server_spec();
            (host.unwrap_or("local"), spec.list_panes().await)
        });
        let mut md = String::new();
        for (name, listed) in futures_util::future::join_all(asks).await {
            md.push_str(&format!("**{name}**\n"));
            match listed {
                Ok(panes) if panes.is_empty() => md.push_str("_(no sessions)_\n"),
                Ok(panes) => {
                    md.push_str("```\n");
                    for line in panes.iter().take(MAX_LISTED_PANES) {
                        md.push_str(&cut_line(line));
                        md.push('\n');
                    }
                    if panes.len() > MAX_LISTED_PANES {
                        md.push_str(&format!("… {} more\n", panes.len() - MAX_LISTED_PANES));
                    }
                    md.push_str("```\n");
                }
                Err(e) => md.push_str(&format!("{e}\n")),
            }
        }
        md.push_str("\nAdopt one with `/gsd:adopt SESSION[:WINDOW.PANE][@HOST] [as NAME]`.");
        md
    }
}

/// Longest pane line `/gsd:sessions` shows: its names and size fit; a
/// program with a 100 KB name does not make the list several cards.
pub const MAX_LISTED_LINE_CHARS: usize = 160;

/// `line` cut at [`MAX_LISTED_LINE_CHARS`] characters, with `…` if it was.
fn cut_line(line: &str) -> std::borrow::Cow<'_, str> {
    match line.char_indices().nth(MAX_LISTED_LINE_CHARS) {
        Some((at, _)) => format!("{}…", &line[..at]).into(),
        None => line.into(),
    }
}

/// Waits between probes of an unreachable host: doubling from
/// `RECONNECT_FIRST` up to `RECONNECT_MAX`, `RECONNECT_ATTEMPTS` times.
pub fn reconnect_delays() -> impl Iterator<Item = Duration> {
    std::iter::successors(Some(RECONNECT_FIRST), |d| Some((*d * 2).min(RECONNECT_MAX)))
        .take(RECONNECT_ATTEMPTS)
}

/// Probes `spec`'s session until its host answers (whether the session
/// exists), waiting [`reconnect_delays`] in between; the last error when
/// the host stayed unreachable.
pub async fn probe_with_backoff(spec: &PaneSpec) -> Result<bool, PaneError> {
    let mut last = None;
    for delay in reconnect_delays() {
        tokio::time::sleep(delay).await;
        match spec.probe().await {
            Ok(exists) => return Ok(exists),
            Err(e) => {
                tracing::info!(host = spec.host_name(), error = %e, "host still unreachable");
                last = Some(e);
            }
        }
    }
    Err(last.unwrap_or_else(|| PaneError::NoSession(spec.session.clone())))
}

/// Why a pane to adopt could not be found.
#[derive(Debug, thiserror::Error)]
pub enum LocateError {
    #[error(transparent)]
    UnknownHost(#[from] UnknownHost),
    #[error(transparent)]
    Pane(#[from] crate::bridge::panes::agent_pane::PaneError),
    #[error("its tmux server did not answer in time")]
    NoAnswer,
}

/// Points `spec` at an adopted pane.
pub fn bind_adopted(spec: &mut PaneSpec, adopted: &AdoptedPane) {
    spec.session = adopted.session.clone();
    spec.adopted = Some(adopted.clone());
}

/// A pane to adopt, as typed in chat: `SESSION[:WINDOW.PANE][@HOST]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdoptTarget {
    pub session: SessionName,
    /// `WINDOW.PANE` (or `WINDOW`), if given: else the session's active pane.
    pub pane: Option<String>,
    pub host: Option<String>,
}

/// Longest session name accepted in an adopt target.
pub const MAX_TARGET_CHARS: usize = 128;

/// Why an adopt target was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdoptTargetError {
    #[error(transparent)]
    Host(#[from] crate::bridge::names::HostNameError),
    #[error(
        "`{0}` is not a session name clawmux adopts: use letters, digits, `-` and `_` (at most {MAX_TARGET_CHARS})"
    )]
    Session(String),
    #[error("`{pane}` is not WINDOW.PANE: use numbers, e.g. `{session}:1.0`")]
    Pane { session: String, pane: String },
}

impl AdoptTarget {
    /// Parses a target. Only plain names and numbers: tmux's target syntax
    /// has special forms (`{marked}`, `~`, patterns) a chat user must not
    /// reach.
    pub fn parse(text: &str) -> Result<AdoptTarget, AdoptTargetError> {
        let (target, host) = match text.rsplit_once('@') {
            Some((t, h)) => {
                crate::bridge::names::validate_host(h)?;
                (t, Some(h.to_string()))
            }
            None => (text, None),
        };
        let (session, pane) = match target.split_once(':') {
            Some((s, p)) => (s, Some(p)),
            None => (target, None),
        };
        let plain = |s: &str| {
            s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
        };
        // No `,` either: clawmux spells a project's `.` so in its own.
        let session = match SessionName::parse(session) {
            Ok(name) if name.as_str().len() <= MAX_TARGET_CHARS && plain(name.as_str()) => name,
            _ => {
                let shown = session.chars().take(MAX_TARGET_CHARS).collect();
                return Err(AdoptTargetError::Session(shown));
            }
        };
        if let Some(p) = pane {
            let numbers = p.split('.').collect::<Vec<_>>();
            let ok = matches!(numbers.len(), 1 | 2)
                && numbers.iter().all(|n| {
                    !n.is_empty() && n.len() <= 5 && n.bytes().all(|b| b.is_ascii_digit())
                });
            if !ok {
                return Err(AdoptTargetError::Pane {
                    session: session.to_string(),
                    pane: p.to_string(),
                });
            }
        }
        Ok(AdoptTarget {
            session,
            pane: pane.map(str::to_string),
            host,
        })
    }

    /// The tmux target: the exact session, then the pane or the active one.
    pub fn tmux_target(&self) -> String {
        format!("={}:{}", self.session, self.pane.as_deref().unwrap_or(""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_pane_lines_are_cut_on_a_character() {
        assert_eq!(cut_line("w:0.0 %1 bash 80x24"), "w:0.0 %1 bash 80x24");
        let wide = "界".repeat(MAX_LISTED_LINE_CHARS + 5);
        let cut = cut_line(&wide);
        assert_eq!(cut.chars().count(), MAX_LISTED_LINE_CHARS + 1);
        assert!(cut.ends_with("界…"));
    }

    #[test]
    fn backoff_doubles_to_a_ceiling_and_stops() {
        let delays: Vec<Duration> = reconnect_delays().collect();
        assert_eq!(delays.len(), RECONNECT_ATTEMPTS);
        assert_eq!(delays[0], RECONNECT_FIRST);
        assert_eq!(delays[1], RECONNECT_FIRST * 2);
        assert_eq!(*delays.last().unwrap(), RECONNECT_MAX);
        assert!(delays.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn adopt_targets() {
        let t = AdoptTarget::parse("work:1.0@desk").unwrap();
        assert_eq!(
            t,
            AdoptTarget {
                session: crate::store::ids::session("work"),
                pane: Some("1.0".into()),
                host: Some("desk".into())
            }
        );
        assert_eq!(t.tmux_target(), "=work:1.0");
        let t = AdoptTarget::parse("my_session").unwrap();
        assert_eq!((t.tmux_target(), t.host), ("=my_session:".into(), None));
        for bad in [
            "", "a b", "{marked}", "w:1.x", "w:", "w:1.2.3", "w;kill", "w@Bad", "~", "w:%3",
        ] {
            assert!(AdoptTarget::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn hosts_resolve_by_name_with_their_roots() {
        let config = Config::parse(
            "workspace_root = \"/l\"\n[hosts.box]\ncommand = [\"ssh\", \"box\", \"tmux\"]\nworkspace_root = \"/srv\"\n[hosts.two]\ncommand = [\"ssh\", \"two\", \"tmux\"]\n",
        )
        .unwrap();
        let hosts = Hosts::new(&config);
        assert_eq!(hosts.watch(Some("box")).unwrap().host_name(), "box");
        assert_eq!(hosts.watch(None).unwrap().host_name(), "local");
        assert_eq!(
            hosts.workspace_root(Some("box")).unwrap(),
            PathBuf::from("/srv")
        );
        assert_eq!(
            hosts.workspace_root(Some("two")).unwrap(),
            PathBuf::from("/l")
        );
        let e = hosts.watch(Some("nope")).err().unwrap();
        assert_eq!(e.known, "box, two");
        assert_eq!(hosts.all().count(), 3);
    }
}
