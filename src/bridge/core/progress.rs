//! Progress card updates: at most one per card per interval, the latest
//! wins; a clock tick sends what fell due.

use std::time::{Duration, Instant};

use super::Core;
use crate::message::Message;

/// A command's progress card updates: at most one per interval, latest wins.
#[derive(Default)]
pub(super) struct Throttle {
    pub(super) last_patch: Option<Instant>,
    pub(super) pending: Option<Message>,
    /// The progress last reported (summary, percent, recent output): the
    /// card is made again from it when only the planning position changed.
    pub(super) last: Option<(String, Option<u8>, String)>,
}

impl Core {
    /// Sends due progress updates: at most one per card per interval.
    pub(super) fn flush_progress(&mut self) {
        let interval = Duration::from_secs(self.config.progress.interval_secs);
        let now = self.now;
        let mut due = Vec::new();
        let shared = &self.shared;
        for (id, t) in &mut self.throttles {
            let progress = |s: &crate::store::State| {
                let job = s.jobs.iter().find(|j| j.id == *id)?;
                job.progress.clone()
            };
            let Some(handle) = shared.read(progress) else {
                continue;
            };
            if t.last_patch
                .is_none_or(|at| now.duration_since(at) >= interval)
                && let Some(card) = t.pending.take()
            {
                t.last_patch = Some(now);
                due.push((handle.clone(), card));
            }
        }
        for (handle, card) in due {
            self.patch(&handle, &card);
        }
    }
}
