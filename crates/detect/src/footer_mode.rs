//! The mode an agent's footer shows (Claude Code's permission mode: `⏸
//! manual mode on · ? for shortcuts`, `⏵⏵ accept edits on`), read with the
//! words the agent's profile gives (`footer_modes`), so detection knows no
//! agent's wording. A mode is reported by the name the profile gives it;
//! what a name means is the agent definition's business.

use serde::Deserialize;

/// `footer_modes` as written in a profile.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FooterModesSpec {
    /// The glyphs a mode row starts with (`⏵⏸`).
    marks: String,
    /// The words after the marks (any case) and the mode they name:
    /// `{ "manual mode on" = "manual" }`.
    modes: std::collections::BTreeMap<String, String>,
    /// Rows of a footer that shows no mode row yet means one (releases
    /// before 2.1.332 showed nothing for the default mode), …
    #[serde(default)]
    plain_rows: Vec<String>,
    /// … and the mode they mean.
    plain_mode: Option<String>,
}

/// A profile's reading of footer modes; empty for agents whose footer shows
/// none.
#[derive(Debug, Clone, Default)]
pub(crate) struct FooterModes {
    marks: Vec<char>,
    /// (words in lowercase, mode name), longest words first so that no
    /// mode's words hide a longer one's.
    modes: Vec<(String, String)>,
    plain_rows: Vec<String>,
    plain_mode: Option<String>,
}

impl FooterModes {
    pub(crate) fn new(spec: &FooterModesSpec) -> FooterModes {
        let mut modes: Vec<(String, String)> = (spec.modes.iter())
            .map(|(words, mode)| (words.to_lowercase(), mode.clone()))
            .collect();
        modes.sort_by_key(|(words, _)| std::cmp::Reverse(words.len()));
        FooterModes {
            marks: spec.marks.chars().collect(),
            modes,
            plain_rows: spec.plain_rows.clone(),
            plain_mode: spec.plain_mode.clone(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.modes.is_empty()
    }

    /// The mode of a mode row (its marks, then the words), and what the
    /// row shows after the words, in lowercase.
    fn row(&self, row: &str) -> Option<(&str, String)> {
        let row = row.trim_start().to_lowercase();
        let rest = row.strip_prefix(self.marks.as_slice())?;
        let rest = rest.trim_start_matches(|c: char| c == ' ' || self.marks.contains(&c));
        let (words, mode) =
            (self.modes.iter()).find(|(words, _)| rest.starts_with(words.as_str()))?;
        Some((mode, rest[words.len()..].to_owned()))
    }

    /// The mode the footer's rows show: a mode row's, else the plain
    /// footer's mode when one of its rows is there.
    pub(crate) fn of_footer<'a>(&self, rows: impl IntoIterator<Item = &'a str>) -> Option<String> {
        let mut plain = false;
        for row in rows {
            if let Some((mode, _)) = self.row(row) {
                return Some(mode.to_owned());
            }
            let row = row.trim_start();
            plain |= self.plain_rows.iter().any(|p| row.starts_with(p.as_str()));
        }
        plain.then(|| self.plain_mode.clone()).flatten()
    }

    /// A mode row drawn only up to its words (`⏸ manual mode on`): the
    /// agent draws the rest (`· ? for shortcuts`) in a write of its own,
    /// so a frame cut there says neither idle nor busy.
    pub(crate) fn cut(&self, row: &str) -> bool {
        self.row(row)
            .is_some_and(|(_, after)| after.trim_matches([' ', '·']).is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claude() -> FooterModes {
        let spec: FooterModesSpec = toml::from_str(
            r#"
marks = "⏵⏸"
modes = { "manual mode on" = "manual", "auto mode on" = "auto", "plan mode on" = "plan", "accept edits on" = "acceptEdits", "bypass permissions on" = "bypassPermissions" }
plain_rows = ["? for shortcuts", "esc to interrupt"]
plain_mode = "manual"
"#,
        )
        .unwrap();
        FooterModes::new(&spec)
    }

    #[test]
    fn a_footer_names_its_mode_by_the_profiles_words() {
        let m = claude();
        for (row, mode) in [
            ("  ⏵⏵ auto mode on (shift+tab to cycle)", Some("auto")),
            ("⏸ manual mode on · ? for shortcuts", Some("manual")),
            ("⏸ plan mode on", Some("plan")),
            ("⏵⏵ Accept edits on", Some("acceptEdits")),
            ("⏵⏵ bypass permissions on", Some("bypassPermissions")),
            ("? for shortcuts", Some("manual")),
            ("esc to interrupt", Some("manual")),
            ("auto mode on", None),
            ("", None),
        ] {
            assert_eq!(m.of_footer([row]).as_deref(), mode, "{row}");
        }
        assert_eq!(
            m.of_footer(["? for shortcuts", "⏵⏵ accept edits on"])
                .as_deref(),
            Some("acceptEdits")
        );
        assert!(
            FooterModes::default()
                .of_footer(["⏸ plan mode on"])
                .is_none()
        );
    }

    #[test]
    fn a_mode_row_cut_after_its_words_is_a_cut_frame() {
        let m = claude();
        for cut in [
            "⏸ manual mode on",
            "⏸ manual mode on · ",
            "⏵⏵ accept edits on",
        ] {
            assert!(m.cut(cut), "{cut}");
        }
        for whole in [
            "⏸ manual mode on · ? for shortcuts · ← for agents",
            "⏸ manual mode on · esc to interrupt",
            "⏵⏵ auto mode on (shift+tab to cycle)",
            "? for shortcuts",
            "Phase 2 · 40%",
        ] {
            assert!(!m.cut(whole), "{whole}");
        }
    }
}
