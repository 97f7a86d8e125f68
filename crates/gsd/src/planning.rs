//! Where a GSD project stands, from its own planning files: `.planning/STATE.md`
//! (current position) and `.planning/ROADMAP.md` (phases), parsed without I/O.
//!
//! GSD 1.42.3's `gsd-sdk` keeps STATE.md as YAML-ish frontmatter
//! (`status:`, `stopped_at:`, a `progress:` map with `total_phases`,
//! `completed_phases`, `total_plans`, `completed_plans`, `percent`) above a
//! markdown body whose "Current Position" section has `Phase: 2 of 3
//! (Cart)`, `Plan: 2 of 3 in current phase`, `Status: …` and `Progress:
//! [██████░░░░] 60%`. The frontmatter's `percent` counts phases while the
//! body's bar counts plans, so both are kept apart. Template placeholders
//! (`[Phase name]`) are not values.

use std::path::Path;

/// Planning files larger than this are not read: GSD's are a few KiB; a
/// bigger file is not one, and reading it whole would hold the daemon.
pub const MAX_PLANNING_BYTES: u64 = 256 * 1024;

/// What the planning files say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Planning {
    /// `(N, M)`: phase N of M.
    pub phase: Option<(u32, u32)>,
    pub phase_name: Option<String>,
    /// `(A, B)`: plan A of B in the current phase.
    pub plan: Option<(u32, u32)>,
    /// `(done, total)` plans over the milestone.
    pub plans_done: Option<(u32, u32)>,
    /// The body's progress bar percentage (plans done over all plans).
    pub percent: Option<u8>,
    /// `executing`, `planning`, … or the body's Status line.
    pub status: Option<String>,
    /// What the last session stopped at.
    pub stopped_at: Option<String>,
    /// Phases listed in ROADMAP.md, and how many are ticked.
    pub roadmap_phases: Option<(u32, u32)>,
}

#[derive(Debug, thiserror::Error)]
pub enum PlanningError {
    #[error("{path}: larger than {MAX_PLANNING_BYTES} bytes, not a GSD planning file")]
    TooLarge { path: String },
    #[error("{path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
}

impl Planning {
    /// Parses STATE.md (and ROADMAP.md when given).
    pub fn parse(state: &str, roadmap: Option<&str>) -> Planning {
        let mut p = Planning::default();
        let (front, body) = split_frontmatter(state);
        let mut progress = Progress::default();
        let mut in_progress_map = false;
        for line in front.lines() {
            let indented = line.starts_with(' ');
            let Some((key, value)) = line.trim().split_once(':') else {
                continue;
            };
            let value = unquote(value.trim());
            if !indented {
                in_progress_map = key == "progress";
            }
            match (in_progress_map && indented, key) {
                (true, "total_phases") => progress.total_phases = value.parse().ok(),
                (true, "completed_phases") => progress.completed_phases = value.parse().ok(),
                (true, "total_plans") => progress.total_plans = value.parse().ok(),
                (true, "completed_plans") => progress.completed_plans = value.parse().ok(),
                (false, "status") => p.status = real_value(value),
                (false, "stopped_at") => p.stopped_at = real_value(value),
                _ => {}
            }
        }
        for line in body.lines() {
            let line = line.trim();
            if let Some(rest) = line.strip_prefix("Phase:") {
                if let Some((n, m, name)) = n_of_m(rest) {
                    p.phase = Some((n, m));
                    p.phase_name = name.and_then(real_value);
                }
            } else if let Some(rest) = line.strip_prefix("Plan:") {
                p.plan = n_of_m(rest).map(|(a, b, _)| (a, b));
            } else if let Some(rest) = line.strip_prefix("Status:") {
                if p.status.is_none() {
                    p.status = real_value(rest.trim());
                }
            } else if let Some(rest) = line.strip_prefix("Progress:") {
                p.percent = percent(rest);
            } else if let Some(rest) = line.strip_prefix("Stopped at:")
                && p.stopped_at.is_none()
            {
                p.stopped_at = real_value(rest.trim());
            }
        }
        if p.phase.is_none()
            && let (Some(done), Some(total)) = (progress.completed_phases, progress.total_phases)
        {
            p.phase = Some((done.saturating_add(1).min(total), total));
        }
        if let (Some(done), Some(total)) = (progress.completed_plans, progress.total_plans)
            && total > 0
        {
            p.plans_done = Some((done.min(total), total));
        }
        p.roadmap_phases = roadmap.and_then(roadmap_phases);
        p
    }

    /// Reads `<workspace>/.planning/STATE.md` (and ROADMAP.md) from this
    /// machine. `Ok(None)`: the project has no GSD state yet.
    pub fn read_local(workspace: &Path) -> Result<Option<Planning>, PlanningError> {
        let dir = workspace.join(".planning");
        let Some(state) = read_bounded(&dir.join("STATE.md"))? else {
            return Ok(None);
        };
        let roadmap = read_bounded(&dir.join("ROADMAP.md"))?;
        Ok(Some(Planning::parse(&state, roadmap.as_deref())))
    }

    /// One line for a status card: `phase 2 of 3 (Cart) · plan 2 of 3 ·
    /// 3/5 plans done · executing`.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if let Some((n, m)) = self.phase {
            let name = (self.phase_name.as_deref())
                .map(|n| format!(" ({n})"))
                .unwrap_or_default();
            parts.push(format!("phase {n} of {m}{name}"));
        }
        if let Some((a, b)) = self.plan {
            parts.push(format!("plan {a} of {b}"));
        }
        if let Some((done, total)) = self.plans_done {
            parts.push(format!("{done}/{total} plans done"));
        } else if let Some(pct) = self.percent {
            parts.push(format!("{pct}%"));
        }
        if let Some(s) = &self.status {
            parts.push(s.clone());
        }
        parts.join(" · ")
    }
}

#[derive(Default)]
struct Progress {
    total_phases: Option<u32>,
    completed_phases: Option<u32>,
    total_plans: Option<u32>,
    completed_plans: Option<u32>,
}

fn read_bounded(path: &Path) -> Result<Option<String>, PlanningError> {
    let shown = || path.display().to_string();
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(PlanningError::Read {
                path: shown(),
                source,
            });
        }
    };
    if meta.len() > MAX_PLANNING_BYTES {
        return Err(PlanningError::TooLarge { path: shown() });
    }
    let bytes = std::fs::read(path).map_err(|source| PlanningError::Read {
        path: shown(),
        source,
    })?;
    Ok(Some(String::from_utf8_lossy(&bytes).into_owned()))
}

/// `(frontmatter, body)`: the frontmatter is what lies between a first line
/// `---` and the next `---` line; without one, all is body.
fn split_frontmatter(text: &str) -> (&str, &str) {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return ("", text);
    };
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return (&rest[..at], &rest[at + line.len()..]);
        }
        at += line.len();
    }
    ("", text)
}

fn unquote(v: &str) -> &str {
    v.strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(v)
}

/// A value that is not empty and not a template placeholder (`[…]`).
fn real_value(v: &str) -> Option<String> {
    let v = v.trim();
    (!v.is_empty() && !v.starts_with('[')).then(|| v.to_string())
}

/// ` 2 of 3 (Cart)` -> `(2, 3, Some("Cart"))`.
fn n_of_m(text: &str) -> Option<(u32, u32, Option<&str>)> {
    let mut words = text.split_whitespace();
    let n = words.next()?.parse().ok()?;
    (words.next()? == "of").then_some(())?;
    let m: u32 = words.next()?.parse().ok()?;
    let name = text
        .split_once('(')
        .and_then(|(_, r)| r.rsplit_once(')'))
        .map(|(name, _)| name.trim());
    (n <= m).then_some((n, m, name))
}

/// `[██████░░░░] 60%` -> 60.
fn percent(text: &str) -> Option<u8> {
    let word = text.split_whitespace().find(|w| w.ends_with('%'))?;
    let pct: u8 = word.trim_end_matches('%').parse().ok()?;
    (pct <= 100).then_some(pct)
}

/// `(listed, ticked)` from the ROADMAP's phase list `- [x] **Phase 1: …**`.
fn roadmap_phases(roadmap: &str) -> Option<(u32, u32)> {
    let (mut listed, mut ticked) = (0u32, 0u32);
    for line in roadmap.lines() {
        let line = line.trim_start();
        let (done, rest) = if let Some(r) = line.strip_prefix("- [x] ") {
            (true, r)
        } else if let Some(r) = line.strip_prefix("- [X] ") {
            (true, r)
        } else if let Some(r) = line.strip_prefix("- [ ] ") {
            (false, r)
        } else {
            continue;
        };
        if rest.starts_with("**Phase ") {
            listed = listed.saturating_add(1);
            ticked = ticked.saturating_add(u32::from(done));
        }
    }
    (listed > 0).then_some((listed, ticked))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape `gsd-sdk query state.sync` (GSD 1.42.3) leaves STATE.md in
    /// for a project at plan 2 of phase 2 with 3 of 5 plans summarised.
    const STATE: &str = "---\n\
gsd_state_version: 1.0\n\
milestone: v1.0\n\
status: executing\n\
stopped_at: \"[Description of last completed action]\"\n\
last_activity: 2026-12-01\n\
progress:\n  total_phases: 3\n  completed_phases: 1\n  total_plans: 5\n  completed_plans: 3\n  percent: 33\n\
---\n\
\n# Project State\n\n## Current Position\n\n\
Phase: 2 of 3 (Cart)\n\
Plan: 2 of 3 in current phase\n\
Status: [Ready to plan / Planning / Ready to execute / In progress / Phase complete]\n\
Last activity: 2026-12-01\n\n\
Progress: [██████░░░░] 60%\n\n\
## Session Continuity\n\nStopped at: [Description of last completed action]\n";

    const ROADMAP: &str = "# Roadmap: Shop\n\n## Phases\n\n\
- [x] **Phase 1: Core** - the data model\n\
- [ ] **Phase 2: Cart** - the cart\n\
- [ ] **Phase 3: Checkout** - paying\n\n\
### Phase 2: Cart\nPlans:\n- [x] 02-01: add\n- [ ] 02-02: remove\n";

    #[test]
    fn state_and_roadmap() {
        let p = Planning::parse(STATE, Some(ROADMAP));
        assert_eq!(p.phase, Some((2, 3)));
        assert_eq!(p.phase_name.as_deref(), Some("Cart"));
        assert_eq!(p.plan, Some((2, 3)));
        assert_eq!(p.plans_done, Some((3, 5)));
        assert_eq!(p.percent, Some(60));
        assert_eq!(p.status.as_deref(), Some("executing"));
        assert_eq!(p.stopped_at, None, "placeholders are not values");
        assert_eq!(p.roadmap_phases, Some((3, 1)), "plan rows are not phases");
        assert_eq!(
            p.summary(),
            "phase 2 of 3 (Cart) · plan 2 of 3 · 3/5 plans done · executing"
        );
    }

    #[test]
    fn a_fresh_template_and_no_frontmatter() {
        let body = "# Project State\n\nPhase: [X] of [Y] ([Phase name])\n\
                    Plan: [A] of [B] in current phase\nStatus: Ready to plan\n\
                    Progress: [░░░░░░░░░░] 0%\n";
        let p = Planning::parse(body, None);
        assert_eq!(p.phase, None);
        assert_eq!(p.plan, None);
        assert_eq!(p.status.as_deref(), Some("Ready to plan"));
        assert_eq!(p.percent, Some(0));
        assert_eq!(p.summary(), "0% · Ready to plan");
    }

    #[test]
    fn the_phase_from_frontmatter_alone() {
        let s = "---\nstatus: planning\nprogress:\n  total_phases: 4\n  completed_phases: 4\n  total_plans: 0\n---\nbody\n";
        let p = Planning::parse(s, None);
        assert_eq!(p.phase, Some((4, 4)));
        assert_eq!(p.plans_done, None, "no plans yet is not 0/0");
    }

    #[test]
    fn garbage_is_no_value_and_no_panic() {
        for s in [
            "",
            "---\n",
            "---\nprogress:\n  total_plans: -1\n",
            "Phase: 9 of 2\nPlan: x of y\nProgress: 300%\n",
            "\u{0}\u{ffff}Phase:",
        ] {
            let p = Planning::parse(s, Some("- [x] **Phase"));
            assert_eq!(p.phase, None, "{s:?}");
            assert_eq!(p.plan, None, "{s:?}");
            assert_eq!(p.percent, None, "{s:?}");
        }
    }

    #[test]
    fn reading_is_bounded_and_missing_is_none() {
        let ws = tempfile::tempdir().unwrap();
        assert!(Planning::read_local(ws.path()).unwrap().is_none());
        std::fs::create_dir_all(ws.path().join(".planning")).unwrap();
        std::fs::write(ws.path().join(".planning/STATE.md"), STATE).unwrap();
        let p = Planning::read_local(ws.path()).unwrap().unwrap();
        assert_eq!(p.plans_done, Some((3, 5)));
        let big = "x".repeat(MAX_PLANNING_BYTES as usize + 1);
        std::fs::write(ws.path().join(".planning/ROADMAP.md"), big).unwrap();
        let err = Planning::read_local(ws.path()).unwrap_err();
        assert!(err.to_string().contains("ROADMAP.md"), "{err}");
    }
}
