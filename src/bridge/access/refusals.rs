//! How often a refused sender is heard: each sender's refusals (messages
//! the policy refused, pairing requests, messages over the rate limit,
//! refused clicks and commands) are counted in a window of their own, and
//! only the first [`MAX_REFUSALS_PER_WINDOW`] of a window are acted on (a
//! log line, a card). The rest are dropped silently and counted; one
//! summary says how many when the window ends (the core's tick) or when the
//! sender's next line is written. A stranger who floods the bot can then
//! spend neither the app's shared send quota nor the event log.
//!
//! Sans-IO: the time comes with each call (the input's `now`).

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The window refusals are counted in: a minute, like the rate limit's.
pub const REFUSAL_WINDOW: Duration = Duration::from_secs(60);
/// Refusals of one sender acted on per window (logged, maybe answered):
/// enough for an operator to see what someone tries and for a person who
/// retries to be told, few enough that a flood costs a handful of lines
/// and cards a minute.
pub const MAX_REFUSALS_PER_WINDOW: u32 = 5;
/// Senders whose refusals are tracked at once at most (a window is
/// forgotten when it ends): bounds what strangers can make the daemon
/// remember. A refusal from a sender past it is dropped and counted with
/// the others past it, never acted on.
pub const MAX_REFUSED_SENDERS: usize = 10_000;

/// What to do with one refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Log it (and answer it, where an answer is due).
    Act,
    /// Over the sender's allowance: nothing written, nothing sent.
    Drop,
}

/// Refusals dropped in a window that ended: what its summary line says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// Whose; `None` for the senders past [`MAX_REFUSED_SENDERS`].
    pub sender: Option<String>,
    pub count: u64,
}

/// One sender's window.
#[derive(Debug)]
struct Window {
    start: Instant,
    acted: u32,
    dropped: u64,
}

impl Window {
    fn new(start: Instant) -> Window {
        Window {
            start,
            acted: 0,
            dropped: 0,
        }
    }

    fn ended(&self, now: Instant) -> bool {
        now.saturating_duration_since(self.start) >= REFUSAL_WINDOW
    }
}

/// Every tracked sender's refusals, bounded by [`MAX_REFUSED_SENDERS`].
#[derive(Debug, Default)]
pub struct Refusals {
    by_sender: HashMap<String, Window>,
    /// Refusals from senders past the bound, in a window of their own.
    untracked: Option<Window>,
    /// When the earliest window ends: before then a tick has nothing to do.
    next_end: Option<Instant>,
}

impl Refusals {
    /// Counts one refusal of `sender` at `now`: whether to act on it, and
    /// the sender's last window's drops when that window ended with some
    /// not yet summarised (their summary goes before this refusal's line).
    pub fn count(&mut self, sender: &str, now: Instant) -> (Verdict, Option<Dropped>) {
        let tracked = self.by_sender.contains_key(sender);
        if !tracked && self.by_sender.len() >= MAX_REFUSED_SENDERS {
            let window = (self.untracked).get_or_insert_with(|| Window::new(now));
            window.dropped += 1;
            self.next_end = earliest(self.next_end, window.start + REFUSAL_WINDOW);
            return (Verdict::Drop, None);
        }
        let window = (self.by_sender)
            .entry(sender.to_owned())
            .or_insert_with(|| Window::new(now));
        let mut ended = None;
        if window.ended(now) {
            let old = std::mem::replace(window, Window::new(now));
            ended = (old.dropped > 0).then(|| Dropped {
                sender: Some(sender.to_owned()),
                count: old.dropped,
            });
        }
        let verdict = if window.acted < MAX_REFUSALS_PER_WINDOW {
            window.acted += 1;
            Verdict::Act
        } else {
            window.dropped += 1;
            Verdict::Drop
        };
        self.next_end = earliest(self.next_end, window.start + REFUSAL_WINDOW);
        (verdict, ended)
    }

    /// The windows ended by `now`, forgotten; the drops of those that had
    /// any, to be summarised.
    pub fn ended(&mut self, now: Instant) -> Vec<Dropped> {
        if self.next_end.is_none_or(|end| now < end) {
            return Vec::new();
        }
        let mut dropped = Vec::new();
        let mut next_end = None;
        self.by_sender.retain(|sender, window| {
            if !window.ended(now) {
                next_end = earliest(next_end, window.start + REFUSAL_WINDOW);
                return true;
            }
            if window.dropped > 0 {
                dropped.push(Dropped {
                    sender: Some(sender.clone()),
                    count: window.dropped,
                });
            }
            false
        });
        // One order for the summaries however the map lays them out.
        dropped.sort_by(|a, b| a.sender.cmp(&b.sender));
        match self.untracked.take() {
            Some(w) if w.ended(now) => dropped.push(Dropped {
                sender: None,
                count: w.dropped,
            }),
            Some(w) => {
                next_end = earliest(next_end, w.start + REFUSAL_WINDOW);
                self.untracked = Some(w);
            }
            None => {}
        }
        self.next_end = next_end;
        dropped
    }
}

fn earliest(a: Option<Instant>, b: Instant) -> Option<Instant> {
    Some(a.map_or(b, |a| a.min(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acted(r: &mut Refusals, sender: &str, now: Instant, n: u32) -> u32 {
        (0..n)
            .filter(|_| r.count(sender, now).0 == Verdict::Act)
            .count() as u32
    }

    #[test]
    fn a_window_acts_on_its_allowance_and_summarises_the_rest_when_it_ends() {
        let t0 = Instant::now();
        let mut r = Refusals::default();
        assert_eq!(acted(&mut r, "ou_x", t0, 40), MAX_REFUSALS_PER_WINDOW);
        assert_eq!(acted(&mut r, "ou_y", t0, 1), 1, "per sender");
        let just_before = t0 + REFUSAL_WINDOW - Duration::from_millis(1);
        assert_eq!(r.ended(just_before), Vec::new());
        assert_eq!(r.count("ou_x", just_before).0, Verdict::Drop);
        let drops = r.ended(t0 + REFUSAL_WINDOW);
        assert_eq!(
            drops,
            vec![Dropped {
                sender: Some("ou_x".into()),
                count: 40 - u64::from(MAX_REFUSALS_PER_WINDOW) + 1,
            }],
            "ou_y dropped nothing: no summary"
        );
        assert!(r.by_sender.is_empty(), "ended windows are forgotten");
        assert_eq!(r.ended(t0 + 2 * REFUSAL_WINDOW), Vec::new(), "once");
        assert_eq!(
            r.count("ou_x", t0 + 2 * REFUSAL_WINDOW),
            (Verdict::Act, None)
        );
    }

    #[test]
    fn the_next_line_of_a_sender_brings_its_summary_when_no_tick_came() {
        let t0 = Instant::now();
        let mut r = Refusals::default();
        acted(&mut r, "ou_x", t0, MAX_REFUSALS_PER_WINDOW + 3);
        let later = t0 + REFUSAL_WINDOW;
        let dropped = Dropped {
            sender: Some("ou_x".into()),
            count: 3,
        };
        assert_eq!(r.count("ou_x", later), (Verdict::Act, Some(dropped)));
        assert_eq!(r.ended(later + REFUSAL_WINDOW), Vec::new(), "said once");
    }

    #[test]
    fn senders_past_the_bound_are_dropped_and_counted_together() {
        let t0 = Instant::now();
        let mut r = Refusals::default();
        for i in 0..MAX_REFUSED_SENDERS {
            r.count(&format!("ou_{i}"), t0);
        }
        assert_eq!(r.count("ou_new", t0), (Verdict::Drop, None));
        assert_eq!(r.count("ou_other", t0), (Verdict::Drop, None));
        assert_eq!(r.by_sender.len(), MAX_REFUSED_SENDERS, "bounded");
        assert_eq!(r.count("ou_0", t0).0, Verdict::Act, "tracked ones go on");
        let drops = r.ended(t0 + REFUSAL_WINDOW);
        assert_eq!(
            drops,
            vec![Dropped {
                sender: None,
                count: 2
            }]
        );
        assert_eq!(r.count("ou_new", t0 + REFUSAL_WINDOW).0, Verdict::Act);
    }
}
