//! The watch session: one hidden session per tmux server, `clawmux-watch`,
//! into which every project's agent window is linked, so that one control
//! client sees every agent pane.
//!
//! Why one client: tmux works for every attached control client whenever
//! it reads a pane, even a client the pane's output is paused for. With 20
//! panes writing flat out on tmux 3.3a, one paused client per session
//! slowed them by as much as 10% in `clawmux bench` (it varies from run to
//! run) and by 10–21% in runs by hand; one client for all of them, by -6% to
//! +4%: within those runs' noise.
//! Attaching also races tmux before 3.7, which crashes when a notification
//! reaches a control client still starting up (tmux issue 4980): sessions
//! are created and the client attached one at a time, under one lock, so
//! clawmux's own commands never race its attaching.
//!
//! Lifetimes stay the user's. A linked window lives while any session holds
//! it, so a project window would outlive its killed session here; the watch
//! client therefore unlinks (and so closes) every window only the watch
//! session holds, when it attaches (at the daemon's start, if an earlier run
//! left the session), on every `%sessions-changed` and after a lag. The
//! session's own window runs `cat`, which waits on its terminal forever
//! without using the CPU.

use std::collections::BTreeMap;
use std::path::PathBuf;

use tokio::sync::Mutex;
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::bridge::config::TmuxConfig;
use crate::bridge::panes::agent_pane::{AgentPane, PaneError, PaneSpec};
use crate::control::{Notification, WindowId};
use crate::store::state::{AdoptedPane, SessionName};
use crate::tmux::{Client, ClientEvent, TmuxCommand, TmuxError};

/// The name of the watch session's own window, the one never swept.
const IDLE_WINDOW: &str = "clawmux-idle";

/// The watch session of one tmux server, attached on first use.
pub struct WatchSession {
    /// The watch session itself, on the projects' server.
    spec: PaneSpec,
    /// The attached client, and the guard that stops its sweeper.
    client: Mutex<Option<(Client, DropGuard)>>,
}

impl WatchSession {
    /// The watch session on the configured server; its client has the
    /// configured size and flood guard.
    pub fn new(tmux: &TmuxConfig) -> WatchSession {
        WatchSession::on(PaneSpec::on_server(tmux, SessionName::watch()))
    }

    /// The watch session on `server`'s tmux server (its program, socket,
    /// size and flood guard; the rest is ignored).
    pub fn on(server: PaneSpec) -> WatchSession {
        let spec = PaneSpec {
            session: SessionName::watch(),
            workspace: PathBuf::from("/"),
            agent: "cat".into(),
            adopted: None,
            ..server
        };
        WatchSession {
            spec,
            client: Mutex::new(None),
        }
    }

    /// A spec for asking this server things (its panes, a file on its
    /// host): no project's session, nothing created.
    pub fn server_spec(&self) -> PaneSpec {
        self.spec_for(SessionName::watch())
    }

    /// A spec for `session` on this server (no agent or workspace yet).
    pub fn spec_for(&self, session: SessionName) -> PaneSpec {
        PaneSpec {
            session,
            workspace: PathBuf::new(),
            agent: String::new(),
            ..self.spec.clone()
        }
    }

    /// Whether the server is reached through a remote shell (`ssh`).
    pub fn is_remote(&self) -> bool {
        self.spec.remote_shell
    }

    /// This server's host name (`local` for the `[tmux]` server).
    pub fn host_name(&self) -> &str {
        self.spec.host_name()
    }

    /// Attaches now when an earlier run left the watch session, so that
    /// windows whose sessions were killed meanwhile are closed now rather
    /// than at the next attach.
    pub async fn resume(&self) {
        let mut slot = self.client.lock().await;
        if self.spec.session_exists().await
            && let Err(error) = self.attach_client(&mut slot).await
        {
            tracing::warn!(%error, "could not attach to the watch session");
        }
    }

    /// Attaches `spec`'s agent pane, creating its session first if it does
    /// not exist and `create` is set. True when it was created.
    pub async fn attach(
        &self,
        spec: &PaneSpec,
        create: bool,
    ) -> Result<(AgentPane, bool), PaneError> {
        let mut slot = self.client.lock().await;
        if let Some(adopted) = &spec.adopted {
            return Ok((attach_adopted(spec, adopted).await?, false));
        }
        let mut created = false;
        if !spec.probe().await? {
            if !create {
                return Err(PaneError::NoSession(spec.session.clone()));
            }
            spec.create_session().await?;
            created = true;
        }
        let client = self.connected(&mut slot).await?;
        let (window, pane) = spec.first_pane(&client).await?;
        let events = client.subscribe_pane(pane);
        link(&client, window).await?;
        let size = (spec.width, spec.height);
        let agent = AgentPane::new(client, (window, pane), size, events);
        Ok((agent.pinned().await?, created))
    }

    /// The attached client: the one in `slot` while it lives, else a new
    /// one (creating the watch session if needed) with its sweeper.
    async fn connected(&self, slot: &mut Option<(Client, DropGuard)>) -> Result<Client, PaneError> {
        if let Some((client, _)) = slot.as_ref().filter(|(c, _)| c.ended().is_none()) {
            return Ok(client.clone());
        }
        if !self.spec.session_exists().await {
            // `-n` also turns automatic renaming off, so the name stays.
            self.spec
                .new_session(&["-n", IDLE_WINDOW], &self.spec.agent)
                .await?;
        }
        self.attach_client(slot).await
    }

    /// Attaches a new client to the watch session, which exists, and
    /// starts its sweeper. (A separate step so that [`WatchSession::resume`],
    /// which has just seen the session, does not ask tmux again: every
    /// question is a process.)
    async fn attach_client(
        &self,
        slot: &mut Option<(Client, DropGuard)>,
    ) -> Result<Client, PaneError> {
        let client = self.spec.connect().await?;
        let stop = CancellationToken::new();
        tokio::spawn(sweep_orphans(client.clone(), stop.clone()));
        *slot = Some((client.clone(), stop.drop_guard()));
        Ok(client)
    }
}

/// Watches a pane the user runs, through a client of its own attached to
/// the pane's session with `ignore-size` and no size of its own, so the
/// pane's window keeps the size the user's terminal gives it.
///
/// Why not the watch session: a window linked into a second session is
/// sized from the clients of both, and the watch client's fixed size
/// (`refresh-client -C`) would shrink or grow the user's window. On tmux
/// 3.3a a control client that never sets a size is left out of window
/// sizing, alone or next to the user's terminal; `ignore-size` leaves it
/// out too, but only while another client is attached (tmux disregards
/// the flag when every client has it), so never setting a size is what
/// keeps a detached session's size (tests/hosts/adopt.rs compares sizes,
/// pids and the window list before, during and after). Its own client
/// costs the pane a little throughput (see the module doc); an adopted
/// pane is the user's interactive agent, not a flood. Dropping the last
/// handle of the client detaches it: nothing else changes.
///
/// The pane found under the recorded id must be the one adopted (see
/// [`AdoptedPane`]): keys and screen reads go through this client only, so
/// checked here, on every attach, they reach that pane or none. tmux never
/// gives a pane id out twice in one server's life, and the client ends
/// with its server.
async fn attach_adopted(spec: &PaneSpec, adopted: &AdoptedPane) -> Result<AgentPane, PaneError> {
    let id = adopted.pane.to_string();
    let location = spec.locate(&id).await?;
    location
        .is(adopted)
        .map_err(|reason| PaneError::NotTheAdopted { pane: id, reason })?;
    let client = spec.connect_adopted(location.session.as_str()).await?;
    let events = client.subscribe_pane(location.pane);
    let ids = (location.window, location.pane);
    let size = (location.width, location.height);
    Ok(AgentPane::new(client, ids, size, events)
        .adopted()
        .pinned()
        .await?)
}

/// Links `window` into the watch session, unless it is there already
/// (tmux would link it twice).
async fn link(client: &Client, window: WindowId) -> Result<(), TmuxError> {
    let session = format!("={}", SessionName::watch());
    let list = TmuxCommand::new("list-windows").args(["-t", &session, "-F", "#{window_id}"]);
    let id = window.to_string();
    if client
        .command(list)
        .await?
        .iter()
        .any(|l| l == id.as_bytes())
    {
        return Ok(());
    }
    let target = format!("{session}:");
    let link = TmuxCommand::new("link-window").args(["-d", "-s", &id, "-t", &target]);
    client.command(link).await.map(drop)
}

/// Sweeps at start and after every change to the server's sessions (or a
/// lag, which may have hidden one), until the client ends or `stop`.
async fn sweep_orphans(client: Client, stop: CancellationToken) {
    let mut events = client.subscribe_general();
    loop {
        if let Err(error) = sweep(&client).await {
            tracing::warn!(%error, "could not sweep the watch session");
        }
        loop {
            let event = tokio::select! {
                () = stop.cancelled() => return,
                event = events.recv() => event,
            };
            match event {
                Some(
                    ClientEvent::Notification(Notification::SessionsChanged)
                    | ClientEvent::Lagged { .. },
                ) => break,
                Some(ClientEvent::Ended(_)) | None => return,
                Some(_) => {}
            }
        }
    }
}

/// Closes every window only the watch session holds (its project session
/// is gone), but its own. Closing a window hangs up on its programs, and
/// Gemini CLI 0.61 outlives the hangup (measured: it ran on, orphaned, in
/// the workspace a recovered session starts a new agent in), so what is
/// left of each pane's process group is then sent SIGTERM, by the tmux
/// server's own host (`run-shell`, so remote hosts too). Only windows
/// clawmux created are linked here: an adopted pane is watched apart.
///
/// The hangup goes first: a pane program that tmux did not see end before
/// its window was closed stayed a zombie of the server (measured on tmux
/// 3.3a, SIGTERM then `unlink-window -k`, 1 run in 6 under load). A group
/// id stays taken while any of its processes lives, so the signal reaches
/// only what is left of that pane.
async fn sweep(client: &Client) -> Result<(), TmuxError> {
    let session = format!("={}", SessionName::watch());
    let format = "#{window_id} #{window_linked_sessions} #{pane_dead} #{pane_pid} #{window_name}";
    let list = TmuxCommand::new("list-panes").args(["-s", "-t", &session, "-F", format]);
    let mut orphans: BTreeMap<WindowId, Vec<u32>> = BTreeMap::new();
    for (window, pid) in client.command(list).await?.iter().filter_map(|l| orphan(l)) {
        orphans.entry(window).or_default().extend(pid);
    }
    for (window, pids) in orphans {
        tracing::info!(%window, ?pids, "closing an agent window whose session is gone");
        let target = format!("{session}:{window}");
        let unlink = TmuxCommand::new("unlink-window").args(["-k", "-t", &target]);
        // Closed already (its program ended) is no reason to spare the rest.
        let closed = client.command(unlink).await;
        if !pids.is_empty() {
            let groups: Vec<String> = pids.iter().map(|p| format!("-{p}")).collect();
            // A group already gone is no error: the rest still get theirs.
            let kill = format!("kill -s TERM -- {} 2>/dev/null; true", groups.join(" "));
            (client.command(TmuxCommand::new("run-shell").arg(&kill))).await?;
        }
        closed?;
    }
    Ok(())
}

/// The window of a `list-panes` line when it is linked nowhere else and is
/// not the idle window, with the pane's process while the pane lives.
fn orphan(line: &[u8]) -> Option<(WindowId, Option<u32>)> {
    let line = std::str::from_utf8(line).ok()?;
    let mut fields = line.splitn(5, ' ');
    let (window, linked) = (fields.next()?, fields.next()?);
    let (dead, pid, name) = (fields.next()?, fields.next()?, fields.next()?);
    if linked != "1" || name == IDLE_WINDOW {
        return None;
    }
    // tmux starts a pane's program as the leader of its own process group.
    let pid = pid.parse().ok().filter(|p| *p > 1 && dead == "0");
    Some((window.parse().ok()?, pid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_windows_held_by_the_watch_session_alone_are_orphans_with_their_live_processes() {
        assert_eq!(orphan(b"@4 1 0 812 claude"), Some((WindowId(4), Some(812))));
        assert_eq!(
            orphan(b"@4 1 0 812 two words"),
            Some((WindowId(4), Some(812)))
        );
        assert_eq!(orphan(b"@4 2 0 812 claude"), None);
        assert_eq!(orphan(b"@0 1 0 77 clawmux-idle"), None);
        assert_eq!(orphan(b"@x 1 0 812 claude"), None);
        assert_eq!(orphan(b"garbage"), None);
        assert_eq!(orphan(&[0xff, b' ', b'1']), None);
        // A dead pane's process may be another's by now; pid 1 is init.
        assert_eq!(orphan(b"@4 1 1 812 claude"), Some((WindowId(4), None)));
        assert_eq!(orphan(b"@4 1 0 1 claude"), Some((WindowId(4), None)));
        assert_eq!(orphan(b"@4 1 0 -3 claude"), Some((WindowId(4), None)));
    }
}
