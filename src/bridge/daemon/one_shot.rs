//! A `clawmux run` with no `serve`: the daemon, started for the one run on
//! the state directory the caller owns meanwhile (its lock: a `serve`
//! started now waits for it), resuming only the run's project. It saves
//! what it did in the state `serve` reads, so a project made or a prompt
//! left waiting by a run is `serve`'s too; what opening that state found
//! for the operator is said on stderr, as `serve` says it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_util::task::TaskTracker;

use crate::bridge::access::policy::RateWindow;
use crate::bridge::config::Config;
use crate::bridge::daemon::{self, Daemon, DaemonSetup, RunCall, RunReply};
use crate::bridge::runs::{RunAsk, RunResult};
use crate::bridge::texts::Msg;
use crate::detect::Profiles;
use crate::i18n::Lang;
use crate::store::SharedState;
use crate::store::db::Migration;
use crate::store::dir_lock::StateLock;
use crate::store::shared::OpenError;

/// How long the daemon gets to finish the input it is on once the run is
/// over (it waits on no project: a loop turn takes milliseconds).
const STOP_GRACE: Duration = Duration::from_secs(2);

/// What a run with no `serve` needs.
pub struct OneShot {
    pub config: Arc<Config>,
    pub profiles: Profiles,
    pub state_dir: PathBuf,
    /// The command that runs the simulated agent (`clawmux sim-agent`).
    pub sim_agent: String,
    /// The state directory, owned for the run.
    pub lock: StateLock,
}

/// Why a run with no `serve` could not be run.
#[derive(Debug, thiserror::Error)]
pub enum OneShotError {
    #[error(transparent)]
    Open(#[from] OpenError),
    #[error("the run's daemon stopped before the run ended")]
    Stopped,
}

/// The line on stderr about an earlier version's state, for a run and
/// for `serve`, if there is something to say: a database the state had
/// moved into is missing, so the state starts empty (see
/// [`Migration::DatabaseMissing`]).
pub fn migration_note(migration: Option<&Migration>, lang: Lang) -> Option<String> {
    let Some(Migration::DatabaseMissing { db, kept }) = migration else {
        return None;
    };
    let kept: Vec<String> = kept.iter().map(|p| p.display().to_string()).collect();
    let (db, kept) = (db.display().to_string(), kept.join(", "));
    let text = Msg::StateDbMissing.with(&[("db", &db), ("kept", &kept)]);
    Some(text.get(lang).to_string())
}

/// Runs `ask` and returns its result, telling `on_progress` the command's
/// progress on the way.
pub async fn run(
    one_shot: OneShot,
    ask: RunAsk,
    mut on_progress: impl FnMut(&str),
) -> Result<RunResult, OneShotError> {
    let OneShot {
        config,
        profiles,
        state_dir,
        sim_agent,
        lock,
    } = one_shot;
    let (shared, opened) = SharedState::open_reporting(&state_dir)?;
    if let Some(note) = migration_note(opened.migration.as_ref(), Lang::from_env()) {
        eprintln!("{note}");
    }
    let hooks = daemon::listen_for_hooks(&state_dir).unwrap_or_else(|e| {
        tracing::warn!("Claude Code hooks are off for this run: {e}");
        mpsc::channel(1).1
    });
    let setup = DaemonSetup {
        config,
        shared: shared.clone(),
        profiles,
        state_dir,
        sim_agent,
        rates: RateWindow::default(),
        actors: TaskTracker::new(),
    };
    // No chat: the channel stays open (and empty) until the run is over.
    let (chat, chat_rx) = mpsc::channel(1);
    let daemon = Daemon::new(setup).only(ask.project.clone());
    let calls = daemon.runs();
    let daemon = tokio::spawn(daemon.run(chat_rx, hooks));
    let (call, mut replies) = RunCall::new(ask);
    let _ = calls.send(call).await;
    let result = loop {
        match replies.next().await {
            Some(RunReply::Progress(summary)) => on_progress(&summary),
            Some(RunReply::Done(result)) => break Some(result),
            None => break None,
        }
    };
    drop(chat);
    if tokio::time::timeout(STOP_GRACE, daemon).await.is_err() {
        tracing::warn!("the run's daemon did not stop in time");
    }
    // What the run changed is on disk before the state is let go.
    shared.flush().await;
    drop(lock);
    result.ok_or(OneShotError::Stopped)
}
