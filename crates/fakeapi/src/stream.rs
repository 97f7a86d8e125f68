//! How the fake model API streams an answer: in small pieces, a random
//! short while apart, the way real model APIs do (a few characters per
//! delta, tens of milliseconds between them). A terminal agent redraws its
//! answer at every delta, so every cut-off copy of a line is drawn before
//! the whole line: a fake that answers in one piece hides every bug in
//! reading results off the screen.
//!
//! The randomness is seeded ([`Streaming::seed`] and the request's number),
//! so a run is reproducible: the same script and requests give the same
//! pieces and the same gaps.
//!
//! Each protocol module frames the pieces its own way; this module only
//! cuts text ([`Chunker`]), times frames ([`Pacer`]) and says what a turn
//! holds ([`Parts`]).

use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::turn::{ToolUse, Turn};

/// Largest piece of text (characters) a delta carries by default: real
/// APIs send a token or a few, 1 to 8 characters.
pub const DEFAULT_MAX_CHUNK_CHARS: usize = 8;

/// Shortest gap between two streamed frames by default.
pub const DEFAULT_MIN_GAP: Duration = Duration::from_millis(20);

/// Longest gap between two streamed frames by default (a model's tokens
/// come 20–60 ms apart).
pub const DEFAULT_MAX_GAP: Duration = Duration::from_millis(60);

/// The seed used unless a test picks another.
pub const DEFAULT_SEED: u64 = 0x5eed_c1a3;

/// How answers stream: piece size and the gap between frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Streaming {
    /// Each text piece holds 1 to this many characters (at least 1).
    pub max_chunk_chars: usize,
    /// Each frame waits between `min_gap` and `max_gap` before the next.
    pub min_gap: Duration,
    pub max_gap: Duration,
    /// Seeds the piece sizes and gaps (mixed with the request number).
    pub seed: u64,
}

impl Default for Streaming {
    fn default() -> Self {
        Streaming {
            max_chunk_chars: DEFAULT_MAX_CHUNK_CHARS,
            min_gap: DEFAULT_MIN_GAP,
            max_gap: DEFAULT_MAX_GAP,
            seed: DEFAULT_SEED,
        }
    }
}

impl Streaming {
    /// The default streaming, with every gap at least `pace` (a test that
    /// wants the agent busy for longer).
    pub fn paced(pace: Duration) -> Streaming {
        let base = Streaming::default();
        let min_gap = base.min_gap.max(pace);
        Streaming {
            min_gap,
            max_gap: base.max_gap.max(min_gap + (base.max_gap - base.min_gap)),
            ..base
        }
    }

    /// Another seed, for a run that wants different pieces.
    pub fn with_seed(self, seed: u64) -> Streaming {
        Streaming { seed, ..self }
    }

    /// The random source for request `id`: the same for the same seed and id.
    fn rng(&self, id: u64, salt: u64) -> StdRng {
        StdRng::seed_from_u64(
            self.seed ^ id.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ salt.rotate_left(32),
        )
    }

    pub(crate) fn chunker(&self, id: u64) -> Chunker {
        Chunker {
            rng: self.rng(id, 1),
            max: self.max_chunk_chars.max(1),
        }
    }

    pub(crate) fn pacer(&self, id: u64) -> Pacer {
        let min = self.min_gap.min(self.max_gap);
        Pacer {
            rng: self.rng(id, 2),
            min,
            max: self.max_gap.max(min),
        }
    }
}

/// Cuts text into random pieces of 1 to `max` characters.
pub(crate) struct Chunker {
    rng: StdRng,
    max: usize,
}

impl Chunker {
    /// `text` in pieces on char boundaries; an empty text is one empty
    /// piece (the protocols still send the block).
    pub(crate) fn split<'a>(&mut self, text: &'a str) -> Vec<&'a str> {
        let mut out = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let want = self.rng.random_range(1..=self.max);
            let end = rest.char_indices().nth(want).map_or(rest.len(), |(i, _)| i);
            out.push(&rest[..end]);
            rest = &rest[end..];
        }
        if out.is_empty() {
            out.push("");
        }
        out
    }
}

/// Draws the gap after each frame.
pub(crate) struct Pacer {
    rng: StdRng,
    min: Duration,
    max: Duration,
}

impl Pacer {
    pub(crate) fn next_gap(&mut self) -> Duration {
        if self.max.is_zero() {
            return Duration::ZERO;
        }
        let min = self.min.as_micros() as u64;
        let max = self.max.as_micros() as u64;
        Duration::from_micros(self.rng.random_range(min..=max))
    }
}

/// What a scripted answer holds, in the order it streams: thinking, text,
/// tool calls.
pub(crate) struct Parts<'a> {
    pub(crate) thinking: Option<&'a str>,
    pub(crate) text: Option<&'a str>,
    pub(crate) tools: &'a [ToolUse],
}

impl<'a> Parts<'a> {
    pub(crate) fn of(turn: &'a Turn) -> Parts<'a> {
        match turn {
            Turn::Text(t) => Parts {
                thinking: None,
                text: Some(t),
                tools: &[],
            },
            Turn::Tools { text, tools } => Parts {
                thinking: None,
                text: text.as_deref(),
                tools,
            },
            Turn::Error { .. } => Parts {
                thinking: None,
                text: None,
                tools: &[],
            },
            Turn::Thought { thinking, answer } => Parts {
                thinking: Some(thinking),
                ..Parts::of(answer)
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_short_rejoin_to_the_text_and_repeat_for_a_seed() {
        let text = "Plain answer from the model, with é and 漢字 in it.";
        let s = Streaming::default();
        let a = s.chunker(3).split(text);
        assert_eq!(a.concat(), text);
        assert!(
            a.iter().all(|p| (1..=8).contains(&p.chars().count())),
            "{a:?}"
        );
        assert!(a.len() > text.chars().count() / 8, "{a:?}");
        assert_eq!(a, s.chunker(3).split(text), "same seed, same pieces");
        let sizes: std::collections::HashSet<usize> = a.iter().map(|p| p.len()).collect();
        assert!(sizes.len() > 1, "piece sizes vary: {a:?}");
        assert_ne!(a, s.with_seed(9).chunker(3).split(text));
        assert_eq!(s.chunker(1).split(""), [""]);
    }

    #[test]
    fn gaps_stay_in_range_and_pace_raises_them() {
        let mut p = Streaming::default().pacer(1);
        for _ in 0..100 {
            let g = p.next_gap();
            assert!(g >= DEFAULT_MIN_GAP && g <= DEFAULT_MAX_GAP, "{g:?}");
        }
        let slow = Streaming::paced(Duration::from_millis(300));
        assert_eq!(slow.min_gap, Duration::from_millis(300));
        assert_eq!(slow.max_gap, Duration::from_millis(340));
        let fast = Streaming::paced(Duration::from_millis(15));
        assert_eq!(fast, Streaming::default());
        let none = Streaming {
            min_gap: Duration::ZERO,
            max_gap: Duration::ZERO,
            ..Streaming::default()
        };
        assert_eq!(none.pacer(1).next_gap(), Duration::ZERO);
    }
}
