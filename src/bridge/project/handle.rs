//! How a project actor is set up and reached: its [`ProjectSetup`], and the
//! [`ProjectHandle`] the bridge sends it commands through.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::task::{AbortOnDropHandle, TaskTracker};

use super::{Actor, ProjectCmd, ProjectError, ProjectEvent};
use crate::agents::claude::{self, PermissionMode};
use crate::agents::{Choice, of_command};
use crate::bridge::config::Config;
use crate::bridge::names::session_name;
use crate::bridge::panes::agent_pane::PaneSpec;
use crate::bridge::panes::watch_session::WatchSession;
use crate::detect::{DetectorConfig, Profile, ProfileError, Profiles};
use crate::store::SharedState;
use crate::store::state::ProjectName;

/// Commands to the actor waiting at most.
const COMMAND_CAPACITY: usize = 64;

/// Everything the actor needs that does not change.
pub struct ProjectSetup {
    pub name: ProjectName,
    pub spec: PaneSpec,
    /// The server's watch session, shared by every project on it.
    pub watch: Arc<WatchSession>,
    pub profile: Arc<Profile>,
    pub detector: DetectorConfig,
    /// The tmux keys that interrupt the agent's turn (`/gsd:cancel`).
    pub interrupt: &'static [&'static str],
    /// Where the actor records its intent before typing a command (the
    /// daemon's state); `None` for `clawmux run`, which keeps no state.
    pub journal: Option<SharedState>,
    /// The configured permission mode, to be set from the keyboard once
    /// the agent's footer shows another: its command line (a wrapper
    /// script, say) could not be given the mode.
    pub apply_mode: Option<PermissionMode>,
}

impl ProjectSetup {
    /// The setup of project `name` from the daemon's configuration. An
    /// unknown per-project profile falls back to the default profile.
    pub fn new(
        config: &Config,
        profiles: &Profiles,
        sim_agent: &str,
        name: &ProjectName,
        workspace: PathBuf,
        watch: Arc<WatchSession>,
        journal: Option<SharedState>,
    ) -> Result<ProjectSetup, ProfileError> {
        Self::with_agent(
            config, profiles, sim_agent, name, None, workspace, watch, journal,
        )
    }

    /// [`ProjectSetup::new`] running `agent` (an agent's name chosen in
    /// chat, see `/gsd:new-project --agent`) instead of the config's.
    #[allow(clippy::too_many_arguments)]
    pub fn with_agent(
        config: &Config,
        profiles: &Profiles,
        sim_agent: &str,
        name: &ProjectName,
        agent: Option<&str>,
        workspace: PathBuf,
        watch: Arc<WatchSession>,
        journal: Option<SharedState>,
    ) -> Result<ProjectSetup, ProfileError> {
        let choice = Choice::of(agent.unwrap_or(config.agent_for(name.as_str())));
        let mode = config.permission_mode_for(name.as_str());
        let agent = choice.start(mode, sim_agent);
        // A profile the project names wins; else the agent's own (Codex's
        // screen is not Claude Code's); else the configured default.
        let own = config
            .projects
            .get(name.as_str())
            .and_then(|p| p.profile.as_deref());
        let profile_name = own.or(choice.profile()).unwrap_or(&config.agent.profile);
        let profile = profiles
            .get(profile_name)
            .or_else(|_| profiles.get(&config.agent.profile))?;
        let apply_mode = keyboard_mode(choice, &profile, mode);
        let spec = PaneSpec {
            workspace,
            agent,
            ..watch.spec_for(session_name(name))
        };
        Ok(ProjectSetup {
            name: name.clone(),
            spec,
            watch,
            profile,
            detector: DetectorConfig {
                debounce: Duration::from_millis(config.agent.debounce_ms),
                stall_quiet: Duration::from_secs(config.agent.stall_secs),
                ..Default::default()
            },
            interrupt: choice
                .agent()
                .map_or(crate::agents::DEFAULT_INTERRUPT, |a| a.interrupt),
            journal,
            apply_mode,
        })
    }
}

/// The mode to set from the keyboard (see [`ProjectSetup::apply_mode`]):
/// for a command clawmux does not know that names no mode itself, read
/// with a profile of Claude Code's screens (whose footer shows the mode).
fn keyboard_mode(
    choice: Choice,
    profile: &Profile,
    mode: PermissionMode,
) -> Option<PermissionMode> {
    match choice {
        Choice::Command(command)
            if of_command(command).is_none()
                && !claude::names_mode(command)
                && profile.reads_footer_mode() =>
        {
            Some(mode)
        }
        _ => None,
    }
}

/// A command a project actor could not take, handed back with why.
pub struct Refused {
    pub cmd: ProjectCmd,
    pub error: ProjectError,
}

/// A handle to a running project actor.
#[derive(Clone)]
pub struct ProjectHandle {
    tx: mpsc::Sender<ProjectCmd>,
    /// The actor stops with its last handle (its daemon stopped): left
    /// running, it would go on recreating lost sessions for nobody.
    _actor: Arc<AbortOnDropHandle<()>>,
}

impl ProjectHandle {
    /// Starts the actor on `actors`, so whoever stops its daemon can wait
    /// until it is gone.
    pub fn spawn(
        setup: ProjectSetup,
        events: mpsc::Sender<ProjectEvent>,
        actors: &TaskTracker,
    ) -> ProjectHandle {
        let (tx, rx) = mpsc::channel(COMMAND_CAPACITY);
        let actor = actors.spawn(Actor::new(setup, events).run(rx));
        ProjectHandle {
            tx,
            _actor: Arc::new(AbortOnDropHandle::new(actor)),
        }
    }

    /// Hands `cmd` to the actor without waiting (the actor sends its
    /// events to whoever sends it commands, so waiting here for room could
    /// wait for ever on an actor that waits for us); a refused command is
    /// handed back.
    pub fn send(&self, cmd: ProjectCmd) -> Result<(), Box<Refused>> {
        self.tx.try_send(cmd).map_err(|e| {
            let (cmd, error) = match e {
                mpsc::error::TrySendError::Full(cmd) => (cmd, ProjectError::Overloaded),
                mpsc::error::TrySendError::Closed(cmd) => (cmd, ProjectError::Stopped),
            };
            Box::new(Refused { cmd, error })
        })
    }
}
