//! Progress card updates: at most one per card per interval, the latest
//! wins; a clock tick sends what fell due. A command's stall (its agent
//! shows nothing new but its busy row) is a status card of its own, sent
//! at once and updated when output resumes or the command ends.

use std::time::{Duration, Instant};

use super::Core;
use crate::bridge::present;
use crate::message::Message;
use crate::store::state::CardHandle;

/// A command's progress card updates: at most one per interval, latest wins.
#[derive(Default)]
pub(super) struct Throttle {
    pub(super) last_patch: Option<Instant>,
    pub(super) pending: Option<Message>,
    /// The progress last reported (summary, percent, recent output): the
    /// card is made again from it when only the planning position changed.
    pub(super) last: Option<(String, Option<u8>, String)>,
    /// The stall card showing, until output resumes (in memory: after a
    /// restart the card stays as sent, its button answering that the
    /// command ended, if it did).
    pub(super) stall: Option<CardHandle>,
}

impl Core {
    /// Command `id`'s agent stalled for `secs` seconds: a status card with
    /// its Interrupt, once a stall.
    pub(super) fn on_stalled(&mut self, id: &str, secs: u64) {
        let Some(j) = self.job(id) else { return };
        if self.throttles.get(id).is_some_and(|t| t.stall.is_some()) {
            return;
        }
        let card = present::stall::stalled_card(&self.title(&j), secs, &j.project, &j.id);
        let mut sent = None;
        self.send_for_job(id, &card, |_, handle| sent = Some(handle.clone()));
        self.throttles.entry(j.id).or_default().stall = sent;
    }

    /// Command `id`'s output resumed after `secs` seconds without, or
    /// (`None`) it ended: its stall card, if one shows, says so.
    pub(super) fn stall_over(&mut self, id: &str, secs: Option<u64>) {
        let Some(handle) = self.throttles.get_mut(id).and_then(|t| t.stall.take()) else {
            return;
        };
        let title = self.job(id).map(|j| self.title(&j)).unwrap_or_default();
        self.patch(&handle, &present::stall::stall_over_card(&title, secs));
    }

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
