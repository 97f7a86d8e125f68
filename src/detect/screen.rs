//! Screen analysis: what the visible screen says right now: is the agent
//! busy, is its idle prompt showing, is an approval prompt waiting.
//!
//! An approval with a menu needs its header AND a numbered menu with the
//! selection cursor (`❯ 1. Yes`) at the bottom of the screen, and no idle
//! prompt: an answer that merely quotes "Do you want to proceed?", or even a
//! numbered list, is not a prompt.

use std::sync::LazyLock;

use regex::Regex;

use super::profiles::Profile;
use super::{ApprovalKind, ApprovalOption};

/// Most non-empty rows allowed under a menu (footer, hints): more means the
/// menu is old output, not the live prompt.
const MAX_FOOTER_ROWS: usize = 3;

/// Most rows between an approval header and the first option.
const MAX_HEADER_GAP: usize = 6;

/// Fewest options a menu has (a one-line "1. foo" is a list, not a menu).
const MIN_OPTIONS: usize = 2;

/// A menu option row: optional cursor, number, `.`, label.
static OPTION_ROW: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?P<cursor>[❯›>]\s*)?(?P<key>\d{1,2})\.\s+(?P<label>\S.*?)\s*$")
        .unwrap_or_else(|e| unreachable!("constant regex: {e}"))
});

/// An approval prompt as read from the screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Prompt {
    pub(crate) kind: ApprovalKind,
    pub(crate) question: String,
    pub(crate) options: Vec<ApprovalOption>,
    pub(crate) context: String,
}

/// What the screen shows.
#[derive(Debug, Default)]
pub(crate) struct ScreenState {
    /// The row holding the busy marker.
    pub(crate) busy: Option<String>,
    pub(crate) idle: bool,
    /// The text in the input box (see the profile's `input`), trimmed.
    pub(crate) input: Option<String>,
    pub(crate) prompt: Option<Prompt>,
}

/// Analyses `rows` (the visible screen, trailing empty rows dropped).
/// `printed(rule)` says whether a menu-less rule's header was printed in
/// the current turn (an old checkpoint still on screen is not a prompt).
pub(crate) fn analyse(
    profile: &Profile,
    rows: &[String],
    printed: impl Fn(usize) -> bool,
) -> ScreenState {
    let filled: Vec<&str> = rows
        .iter()
        .map(String::as_str)
        .filter(|r| !r.trim().is_empty())
        .collect();
    let status = &filled[filled.len().saturating_sub(profile.status_rows)..];
    let status_text = status.join("\n");
    let idle_match = profile.idle.is_match(&status_text);
    let busy = if profile.busy.is_empty() {
        // No busy marker (a shell): anything but the prompt is work.
        (!idle_match && !status.is_empty()).then(|| {
            status
                .last()
                .map_or_else(String::new, |r| r.trim().to_owned())
        })
    } else {
        profile.busy.is_match(&status_text).then(|| {
            status
                .iter()
                .find(|r| profile.busy.is_match(r))
                .map_or_else(|| status_text.clone(), |r| r.trim().to_owned())
        })
    };
    let idle = busy.is_none() && idle_match;
    let input = (profile.input.as_ref())
        .and_then(|re| re.captures(&status_text))
        .and_then(|c| c.get(1))
        .map(|m| m.as_str().trim().to_owned());
    let prompt = approval(profile, rows, idle, busy.is_some(), printed);
    ScreenState {
        busy,
        idle,
        input,
        prompt,
    }
}

fn approval(
    profile: &Profile,
    rows: &[String],
    idle: bool,
    busy: bool,
    printed: impl Fn(usize) -> bool,
) -> Option<Prompt> {
    let first = rows.len().saturating_sub(profile.approval_rows);
    let region = &rows[first..];
    for (index, rule) in profile.approvals.iter().enumerate() {
        let Some(header_at) = region.iter().rposition(|r| rule.header.is_match(r)) else {
            continue;
        };
        let header = region[header_at].trim().to_owned();
        if !rule.menu {
            if busy || !printed(index) {
                continue;
            }
            return Some(Prompt {
                kind: rule.kind,
                question: header,
                options: rule.options.clone(),
                context: region[header_at..].join("\n").trim_end().to_owned(),
            });
        }
        if idle {
            continue;
        }
        let Some(menu) = find_menu(region) else {
            continue;
        };
        // A live prompt stops the agent: a spinner still running below the
        // menu means the menu is just text in the agent's output.
        if region[menu.last + 1..]
            .iter()
            .any(|r| profile.busy.is_match(r))
        {
            continue;
        }
        // The header sits just above the menu, or (AskUserQuestion's footer)
        // just below it; the question is then the row above the menu.
        let question = if header_at < menu.first && menu.first - header_at <= MAX_HEADER_GAP {
            header
        } else if header_at > menu.last && header_at - menu.last <= MAX_FOOTER_ROWS + 1 {
            match region[..menu.first]
                .iter()
                .rev()
                .find(|r| !r.trim().is_empty())
            {
                Some(q) => q.trim().to_owned(),
                None => continue,
            }
        } else {
            continue;
        };
        let top = header_at.min(menu.first);
        return Some(Prompt {
            kind: rule.kind,
            question,
            options: menu.options,
            context: region[top..].join("\n").trim_end().to_owned(),
        });
    }
    None
}

struct Menu {
    first: usize,
    last: usize,
    options: Vec<ApprovalOption>,
}

/// The live numbered menu at the bottom of `region`: options numbered from
/// 1 without gaps, exactly one carrying the cursor, at most
/// [`MAX_FOOTER_ROWS`] non-empty rows below it.
fn find_menu(region: &[String]) -> Option<Menu> {
    // Start from the last "1." row: an earlier list in the output is not it.
    let first = region
        .iter()
        .rposition(|r| OPTION_ROW.captures(r).is_some_and(|c| &c["key"] == "1"))?;
    let mut options: Vec<ApprovalOption> = Vec::new();
    let mut cursors = 0;
    let mut last = first;
    for (i, row) in region.iter().enumerate().skip(first) {
        if let Some(c) = OPTION_ROW.captures(row) {
            if c["key"] != (options.len() + 1).to_string() {
                break;
            }
            cursors += usize::from(c.name("cursor").is_some());
            options.push(ApprovalOption {
                key: c["key"].to_owned(),
                label: c["label"].to_owned(),
            });
            last = i;
        } else if row.starts_with("     ") && !row.trim().is_empty() && !options.is_empty() {
            // A long label wrapped onto an indented row.
            if let Some(o) = options.last_mut() {
                o.label.push(' ');
                o.label.push_str(row.trim());
            }
            last = i;
        } else if !row.trim().is_empty() || i > last + 1 {
            break;
        }
    }
    let below = region[last + 1..]
        .iter()
        .filter(|r| !r.trim().is_empty())
        .count();
    (options.len() >= MIN_OPTIONS && cursors == 1 && below <= MAX_FOOTER_ROWS).then_some(Menu {
        first,
        last,
        options,
    })
}

#[cfg(test)]
mod tests {
    use super::super::Profiles;
    use super::*;

    fn screen(text: &str) -> Vec<String> {
        text.lines().map(str::to_owned).collect()
    }

    fn state(profile: &str, text: &str) -> ScreenState {
        let p = Profiles::defaults().unwrap().get(profile).unwrap();
        analyse(&p, &screen(text), |_| true)
    }

    const PERMISSION: &str = "\
⏺ Bash(rm -rf build)

 Bash command
   rm -rf build

 Do you want to proceed?
 ❯ 1. Yes
   2. Yes, and don't ask again for rm commands in /tmp/proj
   3. No, and tell Claude what to do differently (esc)

 Esc to cancel · Tab to amend";

    const IDLE: &str = "\
⏺ Done.

✻ Churned for 3s

────────────────────────────────────────
❯ 
────────────────────────────────────────
  ? for shortcuts";

    #[test]
    fn permission_prompt() {
        let s = state("claude", PERMISSION);
        let p = s.prompt.unwrap();
        assert_eq!(p.kind, ApprovalKind::Permission);
        assert_eq!(p.question, "Do you want to proceed?");
        let keys: Vec<_> = p
            .options
            .iter()
            .map(|o| (o.key.as_str(), o.label.as_str()))
            .collect();
        assert_eq!(
            keys,
            [
                ("1", "Yes"),
                ("2", "Yes, and don't ask again for rm commands in /tmp/proj"),
                ("3", "No, and tell Claude what to do differently (esc)")
            ]
        );
        assert!(!s.idle);
        assert!(s.busy.is_none());
    }

    #[test]
    fn quoted_prompt_in_an_answer_is_not_an_approval() {
        let answer = format!(
            "⏺ The tool asks: Do you want to proceed?\n  Then pick:\n  1. Yes\n  2. No\n\n{IDLE}"
        );
        assert!(state("claude", &answer).prompt.is_none());
        // Even with a cursor-like marker, the idle box means no live prompt.
        let answer = format!(" Do you want to proceed?\n ❯ 1. Yes\n   2. No\n{IDLE}");
        assert!(state("claude", &answer).prompt.is_none());
        // A menu printed while the agent still works (spinner below it).
        let working =
            " Do you want to proceed?\n ❯ 1. Yes\n   2. No\n✶ Working… (esc to interrupt)";
        assert!(state("claude", working).prompt.is_none());
        // Header without a menu.
        assert!(
            state("claude", " Do you want to proceed?\n\n esc")
                .prompt
                .is_none()
        );
    }

    #[test]
    fn idle_and_busy() {
        let s = state("claude", IDLE);
        assert!(s.idle);
        assert!(s.busy.is_none());
        let busy = IDLE.replace(
            "✻ Churned for 3s",
            "✶ Transfiguring… (9m 34s · esc to interrupt)",
        );
        let s = state("claude", &busy);
        assert!(!s.idle);
        assert_eq!(
            s.busy.as_deref(),
            Some("✶ Transfiguring… (9m 34s · esc to interrupt)")
        );
        assert!(state("shell", "out\nbash-5.2#").idle);
        assert!(!state("shell", "bash-5.2# sleep 3").idle);
    }

    #[test]
    fn the_input_box_text() {
        assert_eq!(state("claude", IDLE).input.as_deref(), Some(""));
        let typed = IDLE.replace("❯ ", "❯ /gsd:plan-phase 2  ");
        assert_eq!(
            state("claude", &typed).input.as_deref(),
            Some("/gsd:plan-phase 2")
        );
        // A submitted command in the history is not in the box.
        let history = IDLE.replace("⏺ Done.", "❯ /gsd:plan-phase 2");
        assert_eq!(state("claude", &history).input.as_deref(), Some(""));
        assert_eq!(state("shell", "bash-5.2# ls").input, None);
    }

    #[test]
    fn ask_user_question() {
        let q = "\
← ☐ Scope  ✔ Submit →

Which scope should phase 2 cover?

❯ 1. Minimal
  2. Full
  3. Type something.

Enter to select · Tab/Arrow keys to navigate · Esc to cancel";
        let p = state("claude", q).prompt.unwrap();
        assert_eq!(p.kind, ApprovalKind::Question);
        assert_eq!(p.question, "Which scope should phase 2 cover?");
        assert_eq!(p.options.len(), 3);
    }

    #[test]
    fn checkpoint_needs_gsd_and_not_busy() {
        let c = format!(
            "CHECKPOINT: Verification Required\n→ YOUR ACTION: open the app\nType \"approved\" or describe issues\n\n{IDLE}"
        );
        let p = state("gsd", &c).prompt.unwrap();
        assert_eq!(p.kind, ApprovalKind::Checkpoint);
        assert_eq!(p.options[0].key, "approved");
        assert!(state("claude", &c).prompt.is_none());
        let busy = c.replace("✻ Churned for 3s", "✶ Working… (esc to interrupt)");
        assert!(state("gsd", &busy).prompt.is_none());
    }
}
