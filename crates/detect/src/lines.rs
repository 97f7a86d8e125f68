//! The line matcher: error, progress and checkpoint-header patterns over
//! finished lines of clean text.
//!
//! Pane text almost never matches, so the common case must be cheap: every
//! non-guard pattern has *trigger* literals, one of which any match
//! contains (its prefix or suffix literals, extracted from the pattern by
//! `regex-syntax`; for the error keywords, the keywords themselves). One
//! SIMD `aho-corasick` pass (plus a `memchr` pass for one-byte literals
//! such as `%`) over a batch of lines finds the few lines that hold a
//! trigger; only those go through the `RegexSet`, and only patterns the set
//! reports are then run for captures and guards. A pattern without usable
//! literals makes every line a candidate (slower, still correct).

use std::cmp::Reverse;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, Input, MatchKind};
use regex::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};
use regex_syntax::hir::literal::{ExtractKind, Extractor};

/// A pattern of a profile that does not compile, with where it came from.
/// Defined here, below the profiles that wrap it, so that this matcher
/// needs nothing from them.
#[derive(Debug, thiserror::Error)]
#[error("profile {profile:?}, {field}: bad pattern {pattern:?}: {source}")]
pub struct PatternError {
    pub profile: String,
    pub field: String,
    pub pattern: String,
    pub source: Box<regex::Error>,
}

/// Compiles one pattern, naming its origin on failure.
pub(crate) fn regex(profile: &str, field: &str, pattern: &str) -> Result<Regex, PatternError> {
    Regex::new(pattern).map_err(|source| PatternError {
        profile: profile.to_owned(),
        field: field.to_owned(),
        pattern: pattern.to_owned(),
        source: Box::new(source),
    })
}

pub(crate) fn regex_set(
    profile: &str,
    field: &str,
    patterns: &[String],
) -> Result<RegexSet, PatternError> {
    RegexSet::new(patterns).map_err(|source| {
        // Name the bad pattern when one fails alone (compiled again only
        // on failure: compiling costs as much as the set).
        let bad = patterns.iter().find_map(|p| regex(profile, field, p).err());
        bad.unwrap_or_else(|| PatternError {
            profile: profile.to_owned(),
            field: field.to_owned(),
            pattern: patterns.join(" | "),
            source: Box::new(source),
        })
    })
}

/// What a pattern in the set is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Error,
    /// The error keywords as one pattern (its triggers are the keywords).
    Keywords,
    Guard,
    Progress,
    /// The header of the approval rule with this index: a menu-less prompt
    /// (a GSD checkpoint) counts only if its header was printed this turn.
    Header(usize),
}

/// Fields of a progress line; `None` when no pattern captured it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ProgressFields {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub percent: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub done: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
}

impl ProgressFields {
    fn is_empty(&self) -> bool {
        *self == ProgressFields::default()
    }
}

/// What one line matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineHit {
    /// An error pattern matched outside every guard.
    Error,
    /// Progress patterns matched; their captures.
    Progress(ProgressFields),
    /// The header of the profile's menu-less approval rule with this index.
    Header(usize),
}

/// Error, guard, progress and header patterns compiled as one set, with
/// their trigger literals.
#[derive(Debug)]
pub(crate) struct LineMatcher {
    set: RegexSet,
    regexes: Vec<(Role, Regex)>,
    /// Trigger literals of two bytes or more (leftmost-first, so the SIMD
    /// searcher is used).
    triggers: Option<AhoCorasick>,
    /// One-byte trigger literals, searched with `memchr` (at most three).
    trigger_bytes: Vec<u8>,
    /// Some pattern has no trigger literal: every line is a candidate.
    every_line: bool,
}

/// Most one-byte triggers searched with `memchr` (`memchr3`); more go to
/// the slower non-SIMD automaton.
const MAX_TRIGGER_BYTES: usize = 3;

/// Each keyword as written, in lower case, UPPER case and Capitalized:
/// the forms a keyword matches in.
fn keyword_forms(keywords: &[String]) -> Vec<String> {
    let mut forms = Vec::new();
    for k in keywords {
        let lower = k.to_lowercase();
        let mut chars = lower.chars();
        let capitalized: String = chars
            .next()
            .map(|c| c.to_uppercase().chain(chars).collect())
            .unwrap_or_default();
        for f in [k.clone(), k.to_uppercase(), lower, capitalized] {
            if !forms.contains(&f) {
                forms.push(f);
            }
        }
    }
    forms
}

/// The error keywords as one word-bounded pattern.
fn keywords_pattern(forms: &[String]) -> Option<String> {
    let words: Vec<String> = forms.iter().map(|k| regex::escape(k)).collect();
    (!words.is_empty()).then(|| format!("(?-u:\\b)(?:{})(?-u:\\b)", words.join("|")))
}

/// Literals one of which every match of `pattern` contains: its prefix or
/// suffix literals, whichever have the longer shortest literal (then the
/// fewer). `None` when neither is a finite set of non-empty literals.
fn trigger_literals(pattern: &str) -> Option<Vec<Vec<u8>>> {
    let hir = regex_syntax::ParserBuilder::new()
        .multi_line(true)
        .build()
        .parse(pattern)
        .ok()?;
    let score = |l: &Vec<Vec<u8>>| (l.iter().map(Vec::len).min().unwrap_or(0), Reverse(l.len()));
    [ExtractKind::Prefix, ExtractKind::Suffix]
        .into_iter()
        .filter_map(|kind| {
            let mut seq = Extractor::new().kind(kind).extract(&hir);
            seq.dedup();
            let lits: Vec<Vec<u8>> = seq
                .literals()?
                .iter()
                .map(|l| l.as_bytes().to_vec())
                .collect();
            (lits.iter().all(|l| !l.is_empty())).then_some(lits)
        })
        .max_by_key(score)
}

impl LineMatcher {
    /// Whether every line is matched (some pattern has no literal to find
    /// candidate lines by).
    #[cfg(test)]
    pub(crate) fn scans_every_line(&self) -> bool {
        self.every_line
    }

    pub(crate) fn new(
        profile: &str,
        errors: &[String],
        keywords: &[String],
        guards: &[String],
        progress: &[String],
        headers: &[(usize, String)],
    ) -> Result<Self, PatternError> {
        let keywords: Vec<String> = keywords
            .iter()
            .map(|k| k.trim().to_owned())
            .filter(|k| !k.is_empty())
            .collect();
        let keywords = keyword_forms(&keywords);
        let lists = [
            (Role::Error, "errors", errors.to_vec()),
            (
                Role::Keywords,
                "error_keywords",
                keywords_pattern(&keywords).into_iter().collect(),
            ),
            (Role::Guard, "error_guards", guards.to_vec()),
            (Role::Progress, "progress", progress.to_vec()),
        ];
        let headers = headers
            .iter()
            .map(|(i, p)| (Role::Header(*i), "approvals.header", vec![p.clone()]));
        let mut regexes = Vec::new();
        for (role, field, list) in lists.into_iter().chain(headers) {
            for p in list {
                let re = RegexBuilder::new(&p)
                    .multi_line(true)
                    .build()
                    .map_err(|source| PatternError {
                        profile: profile.to_owned(),
                        field: field.to_owned(),
                        pattern: p.clone(),
                        source: Box::new(source),
                    })?;
                regexes.push((role, re));
            }
        }
        // `^` and `$` mean the ends of each line, in the batch as in a line.
        let set = RegexSetBuilder::new(regexes.iter().map(|(_, r)| r.as_str()))
            .multi_line(true)
            .build()
            .map_err(|source| PatternError {
                profile: profile.to_owned(),
                field: "errors/error_guards/progress".to_owned(),
                pattern: "(all line patterns)".to_owned(),
                source: Box::new(source),
            })?;
        let mut literals: Vec<Vec<u8>> = keywords.iter().map(|k| k.as_bytes().to_vec()).collect();
        let mut every_line = false;
        for (role, re) in &regexes {
            if matches!(role, Role::Guard | Role::Keywords) {
                continue; // guards only run on candidate lines; keywords are literals
            }
            match trigger_literals(re.as_str()) {
                Some(l) => literals.extend(l),
                None => every_line = true,
            }
        }
        literals.sort();
        literals.dedup();
        let single: Vec<u8> = literals
            .iter()
            .filter(|l| l.len() == 1)
            .map(|l| l[0])
            .collect();
        let trigger_bytes = if single.len() <= MAX_TRIGGER_BYTES {
            literals.retain(|l| l.len() > 1);
            single
        } else {
            Vec::new()
        };
        let triggers = if literals.is_empty() {
            None
        } else {
            let ac = AhoCorasickBuilder::new()
                .match_kind(MatchKind::LeftmostFirst)
                .build(&literals);
            // An automaton that cannot be built (absurd sizes): scan every line.
            every_line |= ac.is_err();
            ac.ok()
        };
        Ok(LineMatcher {
            set,
            regexes,
            triggers,
            trigger_bytes,
            every_line,
        })
    }

    /// Indexes of the lines of `batch` (starting at `starts`) that hold a
    /// trigger literal or keyword, sorted, without duplicates.
    fn candidates(&self, batch: &str, starts: &[usize]) -> Vec<usize> {
        if self.every_line {
            return (0..starts.len()).collect();
        }
        let line_of = |at: usize| starts.partition_point(|&s| s <= at) - 1;
        let mut lines = Vec::new();
        if let Some(ac) = &self.triggers {
            let mut at = 0;
            while let Some(m) = ac.find(Input::new(batch).span(at..batch.len())) {
                let line = line_of(m.start());
                lines.push(line);
                // One hit is enough for a line: go on from the next one.
                match starts.get(line + 1) {
                    Some(&next) => at = next,
                    None => break,
                }
            }
        }
        let hay = batch.as_bytes();
        let byte_hits: Box<dyn Iterator<Item = usize>> = match self.trigger_bytes[..] {
            [] => Box::new(std::iter::empty()),
            [a] => Box::new(memchr::memchr_iter(a, hay)),
            [a, b] => Box::new(memchr::memchr2_iter(a, b, hay)),
            [a, b, c, ..] => Box::new(memchr::memchr3_iter(a, b, c, hay)),
        };
        lines.extend(byte_hits.map(line_of));
        lines.sort_unstable();
        lines.dedup();
        lines
    }

    /// Every pattern, as compiled.
    pub(crate) fn patterns(&self) -> impl Iterator<Item = &str> {
        self.regexes.iter().map(|(_, r)| r.as_str())
    }

    /// Scans `batch` (lines joined by `\n`) and calls `hit(line_index,
    /// hit)` for each line that is an error or reports progress, in line
    /// order (an error before progress on the same line).
    pub(crate) fn scan(&self, batch: &str, mut hit: impl FnMut(usize, LineHit)) {
        let starts: Vec<usize> = std::iter::once(0)
            .chain(memchr::memchr_iter(b'\n', batch.as_bytes()).map(|i| i + 1))
            .collect();
        for index in self.candidates(batch, &starts) {
            let end = starts.get(index + 1).map_or(batch.len(), |e| e - 1);
            let line = &batch[starts[index]..end];
            let matched = self.set.matches(line);
            if !matched.matched_any() {
                continue;
            }
            if self.is_error(line, &matched) {
                hit(index, LineHit::Error);
            }
            let progress = self.progress(line, &matched);
            if !progress.is_empty() {
                hit(index, LineHit::Progress(progress));
            }
            for i in matched.iter() {
                if let (Role::Header(rule), _) = &self.regexes[i] {
                    hit(index, LineHit::Header(*rule));
                }
            }
        }
    }

    /// An error pattern matched `line` somewhere no guard covers.
    fn is_error(&self, line: &str, matched: &regex::SetMatches) -> bool {
        let of_role = |role: Role| {
            matched
                .iter()
                .map(|i| &self.regexes[i])
                .filter(move |(r, _)| *r == role)
                .map(|(_, re)| re)
        };
        let guarded: Vec<(usize, usize)> = of_role(Role::Guard)
            .flat_map(|re| re.find_iter(line).map(|m| (m.start(), m.end())))
            .collect();
        of_role(Role::Error)
            .chain(of_role(Role::Keywords))
            .any(|re| {
                re.find_iter(line)
                    .any(|m| !guarded.iter().any(|&(s, e)| s < m.end() && m.start() < e))
            })
    }

    fn progress(&self, line: &str, matched: &regex::SetMatches) -> ProgressFields {
        let mut out = ProgressFields::default();
        for (_, re) in matched
            .iter()
            .map(|i| &self.regexes[i])
            .filter(|(r, _)| *r == Role::Progress)
        {
            let Some(caps) = re.captures(line) else {
                continue;
            };
            let num = |name: &str| caps.name(name).and_then(|m| m.as_str().parse::<u32>().ok());
            if out.percent.is_none() {
                out.percent = num("percent")
                    .and_then(|p| u8::try_from(p).ok())
                    .filter(|p| *p <= 100);
            }
            out.done = out.done.or(num("done"));
            out.total = out.total.or(num("total"));
            out.phase = out.phase.or(num("phase"));
            if out.stage.is_none() {
                out.stage = caps.name("stage").map(|m| m.as_str().trim().to_owned());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigger_literals_of_patterns() {
        assert_eq!(
            trigger_literals(r"(?-u:\b)(?P<percent>\d{1,3})(?:\.\d+)?%"),
            Some(vec![b"%".to_vec()])
        );
        assert_eq!(trigger_literals(r"\w+$"), None);
    }

    #[test]
    fn pattern_without_literals_still_matches() {
        let m = LineMatcher::new("t", &[r"^\d+$".to_owned()], &[], &[], &[], &[]).unwrap();
        assert!(m.every_line);
        let mut got = Vec::new();
        m.scan("abc\n123\nx1", |i, h| got.push((i, h)));
        assert_eq!(got, vec![(1, LineHit::Error)]);
    }

    #[test]
    fn keywords_match_lower_upper_capitalized_words() {
        let kw = ["error".to_owned(), "not found".to_owned()];
        let m = LineMatcher::new("t", &[], &kw, &[], &[], &[]).unwrap();
        let mut got = Vec::new();
        m.scan(
            "ERROR: x\nterrors\nfile Not found\nnotfound\nErRoR",
            |i, h| got.push((i, h)),
        );
        assert_eq!(got, vec![(0, LineHit::Error), (2, LineHit::Error)]);
    }
}
