//! A turn that shows nothing but its busy row: the agent works, or says it
//! does, and for [`DEFAULT_STALL_QUIET`] nothing on its screen changed but
//! the busy row itself (a spinner frame, a timer counting up). Gemini CLI
//! retries an HTTP 500 or 429 without end this way (`⠼ Thinking... (esc
//! to cancel, 25s)`), and only an interrupt ends it; an agent thinking for
//! long looks the same. It is reported once as a status
//! ([`DetectionKind::Stalled`]), and once more when the screen changes or
//! the work ends ([`DetectionKind::Resumed`]).
//!
//! Sans-IO: the detector hands in each judged screen with its time. A
//! change counts once the judged screens have differed from the one known
//! for [`CHANGE_HOLD`]: Gemini CLI writes each spinner frame in pieces a
//! few milliseconds apart, erasing its box first, so a screen judged
//! between two pieces lacks rows, and the next judged screen is the old
//! one again.

use std::time::Duration;

use super::{DetectionKind, Millis, screen_hash};

/// How long a busy screen may show no change but its busy row before the
/// stall is reported: far longer than any pause between an agent's lines
/// (a model's first token, a tool run), short enough that a person is told
/// while waiting is still a choice. `[agent] stall_secs` changes it.
pub const DEFAULT_STALL_QUIET: Duration = Duration::from_secs(60);

/// How long judged screens must keep differing from the one known before
/// that is a change: longer than a frame takes to draw in pieces (Gemini
/// CLI: under 10 ms), shorter than the time between two of its frames
/// (~50 ms), in which a whole frame is judged.
const CHANGE_HOLD: Duration = Duration::from_millis(30);

/// What a judged screen is, as far as stalls go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Look {
    /// The rows without the busy rows (see [`Look::of`]).
    hash: u64,
    busy: bool,
}

impl Look {
    /// `rows` with every row `is_busy` says shows the agent working left
    /// out (its spinner and timer, the footer saying it works), and whether
    /// it works. Empty rows are left out too: Gemini CLI moves a blank row
    /// from above its spinner to under its footer while it waits.
    pub(crate) fn of(rows: &[String], is_busy: impl Fn(&str) -> bool, busy: bool) -> Look {
        let kept: Vec<String> = (rows.iter())
            .map(|r| r.trim())
            .filter(|r| !r.is_empty() && !is_busy(r))
            .map(str::to_owned)
            .collect();
        Look {
            hash: screen_hash(&kept),
            busy,
        }
    }
}

/// Whether the stall was reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Told {
    Nothing,
    Stalled,
}

/// The screen as last taken, and since when it shows that.
#[derive(Debug, Clone, Copy)]
struct Shown {
    look: Look,
    since: Millis,
}

/// One pane's stall watch.
#[derive(Debug)]
pub(crate) struct Stall {
    /// Zero: never reported.
    quiet: Duration,
    shown: Option<Shown>,
    /// When the judged screens began to differ from `shown` (not yet for
    /// [`CHANGE_HOLD`]: not yet a change), and the latest of them with
    /// since when it shows.
    differs: Option<(Millis, Shown)>,
    told: Told,
}

impl Stall {
    pub(crate) fn new(quiet: Duration) -> Stall {
        Stall {
            quiet,
            shown: None,
            differs: None,
            told: Told::Nothing,
        }
    }

    /// Takes the screen judged at `now`; what to report, if anything.
    pub(crate) fn judge(&mut self, now: Millis, look: Look) -> Option<DetectionKind> {
        let Some(shown) = &mut self.shown else {
            self.shown = Some(Shown { look, since: now });
            return None;
        };
        if look == shown.look {
            self.differs = None;
        } else {
            let latest = Shown { look, since: now };
            let (first, latest) = match self.differs {
                Some((first, seen)) if seen.look == look => (first, seen),
                Some((first, _)) => (first, latest),
                None => (now, latest),
            };
            self.differs = Some((first, latest));
            if now < first + CHANGE_HOLD {
                return None;
            }
            let quiet_for = first.0.saturating_sub(shown.since.0);
            *shown = latest;
            self.differs = None;
            if self.told == Told::Stalled {
                self.told = Told::Nothing;
                return Some(DetectionKind::Resumed {
                    secs: quiet_for / 1000,
                });
            }
            return None;
        }
        let due = self.due().is_some_and(|at| now >= at);
        (due && self.told == Told::Nothing).then(|| {
            self.told = Told::Stalled;
            DetectionKind::Stalled {
                secs: self.quiet.as_secs(),
            }
        })
    }

    /// When the screen is to be judged again, output or not: when the
    /// stall falls due unless the screen changes; when a screen that
    /// differs has held long enough to be a change and would resume a
    /// stall (the agent may draw nothing more: Gemini CLI's spinner stops
    /// with the cancel); when a busy screen not yet taken would be stalled
    /// itself. A screen that differs is taken once it has held, so a
    /// deadline at hand always moves on.
    pub(crate) fn due(&self) -> Option<Millis> {
        if self.quiet.is_zero() {
            return None;
        }
        let stall_at = |s: Shown| s.look.busy.then(|| s.since + self.quiet);
        let shown = self.shown.and_then(stall_at);
        match (self.differs, self.told) {
            (Some((first, _)), Told::Stalled) => Some(first + CHANGE_HOLD),
            (None, Told::Stalled) => None,
            (None, Told::Nothing) => shown,
            (Some((first, latest)), Told::Nothing) => {
                let hold = first + CHANGE_HOLD;
                (shown.or_else(|| stall_at(latest))).map(|at| at.max(hold))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUIET: Duration = Duration::from_secs(60);

    fn look(hash: u64, busy: bool) -> Look {
        Look { hash, busy }
    }

    fn at(secs: u64) -> Millis {
        Millis(secs * 1000)
    }

    #[test]
    fn a_busy_screen_unchanged_for_the_quiet_time_is_reported_once() {
        let mut s = Stall::new(QUIET);
        assert_eq!(s.judge(at(0), look(1, true)), None);
        assert_eq!(s.due(), Some(at(60)));
        assert_eq!(s.judge(at(59), look(1, true)), None);
        assert_eq!(
            s.judge(at(60), look(1, true)),
            Some(DetectionKind::Stalled { secs: 60 })
        );
        assert_eq!(s.judge(at(120), look(1, true)), None, "once");
        assert_eq!(s.due(), None);
        // A change once stalled is judged again when it has held, output
        // or not.
        assert_eq!(s.judge(at(130), look(2, false)), None);
        assert_eq!(s.due(), Some(at(130) + CHANGE_HOLD));
        assert_eq!(
            s.judge(at(130) + CHANGE_HOLD, look(2, false)),
            Some(DetectionKind::Resumed { secs: 130 })
        );
        assert_eq!(s.due(), None);
    }

    #[test]
    fn a_change_seen_twice_resumes_and_restarts_the_wait() {
        let mut s = Stall::new(QUIET);
        s.judge(at(0), look(1, true));
        s.judge(at(60), look(1, true));
        // The first screen that differs may be half a frame.
        assert_eq!(s.judge(at(70), look(2, true)), None);
        assert_eq!(
            s.judge(at(71), look(3, true)),
            Some(DetectionKind::Resumed { secs: 70 })
        );
        assert_eq!(s.due(), Some(at(131)), "counted from the screen it shows");
    }

    #[test]
    fn half_a_frame_between_two_whole_ones_is_no_change() {
        let mut s = Stall::new(QUIET);
        s.judge(at(0), look(1, true));
        // Half a frame, judged twice before the frame's last piece came.
        assert_eq!(s.judge(Millis(30_000), look(9, true)), None);
        assert_eq!(s.judge(Millis(30_004), look(8, true)), None);
        assert_eq!(s.judge(Millis(30_006), look(1, true)), None);
        assert_eq!(
            s.judge(at(60), look(1, true)),
            Some(DetectionKind::Stalled { secs: 60 })
        );
    }

    #[test]
    fn a_change_followed_by_silence_is_taken_when_it_held() {
        let mut s = Stall::new(QUIET);
        s.judge(at(0), look(1, true));
        s.judge(at(10), look(2, true));
        // Judged again only when the stall would fall due (no output
        // meanwhile): the change held, and the wait starts from it.
        assert_eq!(s.due(), Some(at(60)));
        assert_eq!(s.judge(at(60), look(2, true)), None);
        assert_eq!(s.due(), Some(at(70)), "counted from the change");
    }

    #[test]
    fn an_idle_screen_never_stalls_and_the_end_of_work_resumes() {
        let mut s = Stall::new(QUIET);
        s.judge(at(0), look(1, false));
        assert_eq!(s.due(), None);
        assert_eq!(s.judge(at(600), look(1, false)), None);
        s.judge(at(601), look(1, true));
        s.judge(at(602), look(1, true));
        assert_eq!(s.due(), Some(at(661)), "counted from the first busy screen");
        assert_eq!(
            s.judge(at(661), look(1, true)),
            Some(DetectionKind::Stalled { secs: 60 })
        );
        // The busy row went (the turn ended), the rest unchanged.
        s.judge(at(662), look(1, false));
        assert_eq!(
            s.judge(at(663), look(1, false)),
            Some(DetectionKind::Resumed { secs: 61 })
        );
    }

    /// Gemini CLI 0.61.0 retrying an HTTP 500 without end (recorded from
    /// the real CLI against the fake API: `tests/agent/detect_recordings.rs`),
    /// its spinner and timer alone redrawn ~30 times a second for 25 s, then
    /// Esc: one stall, counted from the last change of its screen (the
    /// prompt taken), and one resumption when the cancel is drawn. The
    /// recording is shorter than the default minute, so the stall time is
    /// configured; every frame is written in pieces, so half frames are
    /// judged all along.
    #[test]
    fn gemini_retrying_without_end_is_one_stall_until_it_is_cancelled() {
        use super::super::DetectorConfig;
        use super::super::stream::replay;
        let recording = replay::fixture("gemini-0.61.0/retry_500");
        let quiet = Duration::from_secs(15);
        let config = DetectorConfig {
            stall_quiet: quiet,
            ..DetectorConfig::default()
        };
        for bytewise in [false, true] {
            let seen = replay::detections(&recording, "gemini", config.clone(), bytewise);
            let at = |want: fn(&DetectionKind) -> bool| -> Vec<Millis> {
                (seen.iter())
                    .filter(|d| want(&d.kind))
                    .map(|d| d.at_ms)
                    .collect()
            };
            let busy = at(|k| *k == DetectionKind::Busy);
            let stalled = at(|k| matches!(k, DetectionKind::Stalled { secs: 15 }));
            let resumed = at(|k| matches!(k, DetectionKind::Resumed { .. }));
            let ended = at(|k| matches!(k, DetectionKind::Interrupted { .. }));
            assert_eq!(busy.len(), 1, "{seen:#?}");
            assert_eq!(
                (stalled.len(), resumed.len(), ended.len()),
                (1, 1, 1),
                "{seen:#?}"
            );
            // The prompt's echo and the spinner's first frame are the last
            // changes: the stall comes the quiet time after them.
            let quiet_since = busy[0];
            assert!(
                stalled[0] >= quiet_since + quiet
                    && stalled[0] < quiet_since + quiet + CHANGE_HOLD * 10,
                "stalled at {stalled:?}, busy from {busy:?}"
            );
            assert!(
                resumed[0] > stalled[0] && resumed[0] <= ended[0],
                "{seen:#?}"
            );
        }
    }

    /// The screen changed at the very judgement the stall fell due at (an
    /// agent state lapsing then, so the screen no longer reads busy): the
    /// next judgement comes once the change held, never at the same time
    /// again (a caller ticking at each deadline would spin).
    #[test]
    fn a_change_at_the_stall_time_moves_the_deadline_on() {
        let mut s = Stall::new(QUIET);
        s.judge(at(0), look(1, true));
        assert_eq!(s.judge(at(60), look(1, false)), None);
        let next = s.due().expect("judged again");
        assert!(next > at(60), "{next:?}");
        assert_eq!(s.judge(next, look(1, false)), None);
        assert_eq!(s.due(), None, "taken: not busy");
        // Busy again, and nothing drawn after: it stalls from then.
        assert_eq!(s.judge(at(100), look(1, true)), None);
        assert_eq!(s.due(), Some(at(160)));
        assert_eq!(s.judge(at(160), look(1, true)), None, "taken first");
        assert_eq!(
            s.judge(s.due().expect("due"), look(1, true)),
            Some(DetectionKind::Stalled { secs: 60 })
        );
    }

    #[test]
    fn a_zero_quiet_time_never_reports() {
        let mut s = Stall::new(Duration::ZERO);
        s.judge(at(0), look(1, true));
        assert_eq!(s.due(), None);
        assert_eq!(s.judge(at(10_000), look(1, true)), None);
    }
}
