//! The running command's streamed answer card, as the core sees it: the
//! answer so far written into the state's [`AnswerStream`] (the streaming
//! task brings the card there), and the final text set once when the
//! command ends. Off with `feishu.stream_answers = false`.

use super::Core;
use crate::store::state::Job;
use crate::store::stream::{AnswerStream, MAX_STREAM_TEXT_BYTES, MAX_STREAMS, bounded_tail};

impl Core {
    /// The project's running command has more answer text.
    pub(super) fn on_answer(&mut self, job: &Option<Job>, text: &str) {
        if !self.config.feishu.stream_answers || text.trim().is_empty() {
            return;
        }
        let Some(job) = job else { return };
        // Only a command a chat still waits for: not a recovery turn's, nor
        // a `clawmux run`'s (it reads its outcome, not cards).
        let chat_waits = self.job(&job.id).is_some_and(|j| !j.target.is_run());
        if !chat_waits {
            return;
        }
        let title = self.title(job);
        let text = bounded_tail(text, MAX_STREAM_TEXT_BYTES);
        self.shared.update(|s| {
            if !s.streams.contains_key(&job.id) && s.streams.len() >= MAX_STREAMS {
                // A runaway: the oldest stream stops (its card keeps what it showed).
                let oldest = (s.streams.values())
                    .min_by_key(|st| st.created_ms)
                    .map(|st| st.job.clone());
                if let Some(oldest) = oldest {
                    s.streams.remove(&oldest);
                }
            }
            let stream = s.streams.entry(job.id.clone()).or_insert_with(|| {
                AnswerStream::new(
                    job.id.clone(),
                    job.target.clone(),
                    job.reply_to.clone(),
                    title,
                    self.now_ms,
                )
            });
            if stream.final_text.is_none() {
                stream.text = text;
            }
        });
    }

    /// The command `id` ended: its stream closes with `output` (the
    /// result's text), or, when it ended without one, with what it showed.
    /// Set once: a later call changes nothing.
    pub(super) fn end_stream(&mut self, id: &str, output: Option<&str>) {
        self.shared.update(|s| {
            let Some(stream) = s.streams.get_mut(id) else {
                return;
            };
            if stream.final_text.is_some() {
                return;
            }
            let text = match output {
                Some(o) if !o.trim().is_empty() => bounded_tail(o, MAX_STREAM_TEXT_BYTES),
                _ => stream.text.clone(),
            };
            stream.final_text = Some(text);
        });
    }
}
