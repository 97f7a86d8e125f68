//! A project's GSD planning files (`.planning/STATE.md`, `ROADMAP.md`)
//! watched while a command runs, so that a position GSD writes without
//! printing anything (its `gsd-sdk` updates STATE.md between steps) still
//! reaches the progress card: a task of its own, polling on a slow period,
//! that reports each new position as a [`ProjectEventKind::Planning`]
//! straight to the daemon (the actor's loop never waits on a host).
//!
//! A poll is cheap: on this machine the files' sizes and modification
//! times are compared, and the files read only when those changed; on a
//! remote host one bounded read of both files ([`crate::gsd::host`]) costs
//! what a listing of their times would (one ssh round trip), so they are
//! read and their summaries compared, on a slower period. No file-notification crate: a poll
//! works the same on both, and GSD's steps take seconds to minutes.

use std::path::Path;
use std::time::{Duration, SystemTime};

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::messages::{ProjectEvent, ProjectEventKind};
use crate::bridge::panes::agent_pane::PaneSpec;
use crate::gsd::host::{self, HostFilesError};
use crate::store::state::{Job, ProjectName};

/// How often a local project's planning files are looked at while a
/// command runs: GSD writes STATE.md once per step (seconds to minutes
/// apart), and a look is two `stat`s.
pub const PLANNING_POLL: Duration = Duration::from_secs(2);
/// How often a remote project's are: each look is an ssh login on its
/// host, so less often; a step still shows within one period.
pub const REMOTE_PLANNING_POLL: Duration = Duration::from_secs(10);

/// The planning files whose changes are looked for.
const WATCHED: [&str; 2] = [".planning/STATE.md", ".planning/ROADMAP.md"];

/// The watching task; dropping this stops it.
pub struct PlanningWatch {
    task: JoinHandle<()>,
}

impl Drop for PlanningWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl PlanningWatch {
    /// Watches `spec`'s workspace for `job` of `project`, reporting to
    /// `events`: at once (the position when the command starts), then on
    /// every change.
    pub fn start(
        spec: PaneSpec,
        project: &ProjectName,
        job: Job,
        events: mpsc::Sender<ProjectEvent>,
    ) -> PlanningWatch {
        let project = project.clone();
        let task = tokio::spawn(async move {
            let mut stamp = None;
            let mut told: Option<String> = None;
            loop {
                let changed = if spec.remote_shell {
                    true
                } else {
                    let now = Some(local_stamp(&spec.workspace).await);
                    let changed = now != stamp;
                    stamp = now;
                    changed
                };
                if changed {
                    let summary = match host::planning(&spec.project_host()).await {
                        Ok(p) => p.map(|p| p.summary()),
                        // This host's files are never readable.
                        Err(HostFilesError::NoShell(_)) => return,
                        Err(HostFilesError::Planning(e)) => Some(format!("cannot read: {e}")),
                        // A host that did not answer this time: the last
                        // position stands until the next look.
                        Err(HostFilesError::Failed { .. }) => None,
                    };
                    if let Some(summary) =
                        summary.filter(|s| !s.is_empty() && told.as_ref() != Some(s))
                    {
                        told = Some(summary.clone());
                        let event = ProjectEvent {
                            project: project.clone(),
                            job: Some(job.clone()),
                            kind: ProjectEventKind::Planning { summary },
                        };
                        if events.send(event).await.is_err() {
                            return; // the daemon is gone
                        }
                    }
                }
                let period = if spec.remote_shell {
                    REMOTE_PLANNING_POLL
                } else {
                    PLANNING_POLL
                };
                tokio::time::sleep(period).await;
            }
        });
        PlanningWatch { task }
    }
}

/// Size and modification time of each watched file (`None` where missing).
type Stamp = Vec<Option<(u64, SystemTime)>>;

async fn local_stamp(workspace: &Path) -> Stamp {
    let mut stamp = Vec::with_capacity(WATCHED.len());
    for file in WATCHED {
        stamp.push(meta(&workspace.join(file)).await);
    }
    stamp
}

async fn meta(path: &Path) -> Option<(u64, SystemTime)> {
    let m = tokio::fs::metadata(path).await.ok()?;
    Some((m.len(), m.modified().ok()?))
}
