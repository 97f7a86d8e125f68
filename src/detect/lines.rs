//! The line matcher: error and progress patterns over finished lines of
//! clean text, one `RegexSet` pass over a whole batch of lines.
//!
//! Pane text almost never matches, so the common case is a single scan of
//! the batch by the set; only patterns the set reports are then run, and
//! only on the lines they hit. Patterns are compiled multi-line so `^` and
//! `$` anchor at line ends inside a batch.

use regex::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};

use super::profiles::ProfileError;

/// What a pattern in the set is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Error,
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
pub(crate) enum LineHit {
    Error,
    Progress(ProgressFields),
    Header(usize),
}

/// Error, guard and progress patterns compiled as one set.
#[derive(Debug)]
pub(crate) struct LineMatcher {
    set: RegexSet,
    regexes: Vec<(Role, Regex)>,
}

impl LineMatcher {
    pub(crate) fn new(
        profile: &str,
        errors: &[String],
        guards: &[String],
        progress: &[String],
        headers: &[(usize, String)],
    ) -> Result<Self, ProfileError> {
        let lists = [
            (Role::Error, "errors", errors.to_vec()),
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
                    .map_err(|source| ProfileError::Pattern {
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
            .map_err(|source| ProfileError::Pattern {
                profile: profile.to_owned(),
                field: "errors/error_guards/progress".to_owned(),
                pattern: "(all line patterns)".to_owned(),
                source: Box::new(source),
            })?;
        Ok(LineMatcher { set, regexes })
    }

    /// Scans `batch` (lines joined by `\n`) and calls `hit(line_index,
    /// hit)` for each line that is an error or reports progress, in line
    /// order (an error before progress on the same line).
    pub(crate) fn scan(&self, batch: &str, mut hit: impl FnMut(usize, LineHit)) {
        let matched = self.set.matches(batch);
        if !matched.matched_any() {
            return;
        }
        // Lines hit by some pattern other than a guard.
        let mut candidates: Vec<usize> = Vec::new();
        let starts: Vec<usize> = std::iter::once(0)
            .chain(memchr::memchr_iter(b'\n', batch.as_bytes()).map(|i| i + 1))
            .collect();
        for i in matched.iter() {
            let (role, re) = &self.regexes[i];
            if *role == Role::Guard {
                continue;
            }
            for m in re.find_iter(batch) {
                candidates.push(starts.partition_point(|&s| s <= m.start()) - 1);
            }
        }
        candidates.sort_unstable();
        candidates.dedup();
        for index in candidates {
            let end = starts.get(index + 1).map_or(batch.len(), |e| e - 1);
            let line = &batch[starts[index]..end];
            if self.is_error(line, &matched) {
                hit(index, LineHit::Error);
            }
            let progress = self.progress(line, &matched);
            if !progress.is_empty() {
                hit(index, LineHit::Progress(progress));
            }
            for i in matched.iter() {
                if let (Role::Header(rule), re) = &self.regexes[i]
                    && re.is_match(line)
                {
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
        of_role(Role::Error).any(|re| {
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
    use super::super::Profiles;
    use super::*;

    fn hits(profile: &str, text: &str) -> Vec<(usize, LineHit)> {
        let p = Profiles::defaults().unwrap().get(profile).unwrap();
        let mut out = Vec::new();
        p.lines.scan(text, |i, h| out.push((i, h)));
        out
    }

    #[test]
    fn errors_with_guards() {
        let text = [
            "Error: cannot open file",                 // 0 error
            "Compiled with 0 errors",                  // 1 guarded
            "see docs/error-handling.md for more",     // 2 guarded
            "errors: 0, warnings: 2",                  // 3 guarded
            "API Error: 500 Internal server error",    // 4 error
            "terrorism is not a keyword match",        // 5 no word boundary
            "Please run /login · API key invalid",     // 6 error
            "test result: FAILED. 1 passed; 1 failed", // 7 error
            "all good",                                // 8
            "Traceback (most recent call last):",      // 9 error
        ]
        .join("\n");
        let lines: Vec<usize> = hits("claude", &text)
            .into_iter()
            .filter(|(_, h)| *h == LineHit::Error)
            .map(|(i, _)| i)
            .collect();
        assert_eq!(lines, [0, 4, 6, 7, 9]);
    }

    #[test]
    fn progress_forms() {
        let text = "building 42%\n[3/10] compiling\nPhase 2 of 4\n━━━ GSD ► EXECUTING WAVE 1\nProgress: ███░ 80%\nno numbers here\n250% is not a percent";
        let got = hits("gsd", text);
        let p = |percent, done, total, phase, stage: Option<&str>| {
            LineHit::Progress(ProgressFields {
                percent,
                done,
                total,
                phase,
                stage: stage.map(str::to_owned),
            })
        };
        assert_eq!(
            got,
            vec![
                (0, p(Some(42), None, None, None, None)),
                (1, p(None, Some(3), Some(10), None, None)),
                (2, p(None, None, None, Some(2), None)),
                (3, p(None, None, None, None, Some("EXECUTING WAVE 1"))),
                (4, p(Some(80), None, None, None, None)),
            ]
        );
        // The shell profile has no GSD banner pattern.
        assert!(hits("shell", "━━━ GSD ► EXECUTING WAVE 1").is_empty());
    }
}
