//! What every dialog reader shares: a dialog as read (`Dialog`), how its
//! option is chosen with keys (`MenuSelect`, its presses), and the row
//! helpers and bounds of `dialog` (numbered menus) and `arrow_menu`
//! (arrow-key lists and sliders), below both.

use super::ApprovalOption;

/// Rows at the bottom of the screen searched for a dialog: the tallest
/// dialog (a plan or a diff) fits in a 60-row pane.
pub const MAX_DIALOG_ROWS: usize = 60;

/// Shortest run of `─` taken as a rule (a dialog's rule spans the pane).
const MIN_RULE_CHARS: usize = 10;

/// The body kept for a dialog: a diff or plan can be long, a card cannot.
pub const MAX_BODY_ROWS: usize = 40;
/// The body kept for a dialog, in bytes (see [`MAX_BODY_ROWS`]).
pub const MAX_BODY_BYTES: usize = 4096;
/// Marks a body cut to [`MAX_BODY_ROWS`] / [`MAX_BODY_BYTES`].
pub const BODY_CUT: &str = "[…]";

/// How a dialog's option is chosen with keys.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MenuSelect {
    /// The option's key is typed (a digit selects and confirms, a word is
    /// typed and submitted).
    #[default]
    Typed,
    /// Up/Down from the option at `cursor` (0-based), then Enter.
    Vertical { cursor: usize },
    /// Left/Right from the position at `cursor` (0-based), then Enter.
    Horizontal { cursor: usize },
    /// A multi-select list: a digit ticks or unticks its option, Right
    /// goes on (to the next question, or the review before submitting).
    /// Bit `n` of `ticked` is option `n + 1`'s tick as drawn.
    Ticks { ticked: u128 },
}

/// Most options of a multi-select list a digit reaches.
pub(crate) const MAX_TICK_OPTIONS: usize = 9;

/// The option keys of a several-options answer (`1,3`), in order, once
/// each; `None` unless `key` lists at least one.
pub fn several_keys(key: &str) -> Option<Vec<&str>> {
    let mut keys: Vec<&str> = Vec::new();
    for k in key.split(',').map(str::trim) {
        if k.is_empty() {
            return None;
        }
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    (key.contains(',') || keys.len() == 1).then_some(keys)
}

impl MenuSelect {
    /// The tmux key names that choose option `key` (`1`, `2`, … in screen
    /// order), or `None` when the key is typed as it is.
    pub fn presses(&self, key: &str) -> Option<Vec<&'static str>> {
        let (cursor, back, forth) = match *self {
            MenuSelect::Typed => return None,
            MenuSelect::Ticks { ticked } => return ticks(ticked, key),
            MenuSelect::Vertical { cursor } => (cursor, "Up", "Down"),
            MenuSelect::Horizontal { cursor } => (cursor, "Left", "Right"),
        };
        let target = key.parse::<usize>().ok()?.checked_sub(1)?;
        let (name, count) = if target < cursor {
            (back, cursor - target)
        } else {
            (forth, target - cursor)
        };
        let mut keys = vec![name; count];
        keys.push("Enter");
        Some(keys)
    }
}

/// The digits that make exactly the options `key` lists (`1,3`) ticked,
/// given `ticked`, then Right.
fn ticks(ticked: u128, key: &str) -> Option<Vec<&'static str>> {
    const DIGITS: [&str; MAX_TICK_OPTIONS] = ["1", "2", "3", "4", "5", "6", "7", "8", "9"];
    let mut wanted = 0u128;
    for k in several_keys(key)? {
        let n = k
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_TICK_OPTIONS).contains(n))?;
        wanted |= 1 << (n - 1);
    }
    let mut keys: Vec<&'static str> = (0..MAX_TICK_OPTIONS)
        .filter(|i| (wanted ^ ticked) & (1 << i) != 0)
        .map(|i| DIGITS[i])
        .collect();
    keys.push("Right");
    Some(keys)
}

/// A dialog as read from the screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dialog {
    /// The text asking (a whole paragraph, joined).
    pub(crate) question: String,
    /// What is asked about: the rows between the dialog's top and its
    /// question, de-indented, bounded.
    pub(crate) body: String,
    pub(crate) options: Vec<ApprovalOption>,
    /// The hint rows under the menu.
    pub(crate) footer: String,
    /// The dialog's rows (top to footer), borders stripped.
    pub(crate) context: String,
    /// The title row (`Bash command`, `Edit file`, …) when there is one.
    pub(crate) title: String,
    /// The body still shows a placeholder (`…`) where the diff will be, or
    /// a scrolled list shows one option (the rest may be a frame away).
    pub(crate) loading: bool,
    /// The menu is in a box of its own (`│ ❯ 1. Yes │`).
    pub(crate) boxed: bool,
    /// How an option is chosen: by its digit, or (a menu without numbers)
    /// by arrow keys from the cursor.
    pub(crate) select: MenuSelect,
}

/// One screen row made readable: NBSP as space, box borders removed.
/// `None` for a row that is only a box edge.
pub(crate) fn clean(row: &str) -> String {
    let row = row.replace('\u{a0}', " ");
    let t = row.trim_start();
    if let Some(inner) = t.strip_prefix('│') {
        let inner = inner.trim_end();
        let inner = inner.strip_suffix('│').unwrap_or(inner);
        // Keep the inside's own indent: the box itself adds one column.
        return inner
            .strip_prefix(' ')
            .unwrap_or(inner)
            .trim_end()
            .to_owned();
    }
    row.trim_end().to_owned()
}

/// A `─` rule (or a box's top edge `╭──╮`), the separator Claude Code draws
/// above its input box and its dialogs.
pub(crate) fn is_rule(row: &str) -> bool {
    let t = row.trim();
    let inner = t
        .strip_prefix('╭')
        .and_then(|s| s.strip_suffix('╮'))
        .unwrap_or(t);
    inner.chars().count() >= MIN_RULE_CHARS && inner.chars().all(|c| c == '─')
}

/// A row that is only a web address.
pub(crate) fn is_link(row: &str) -> bool {
    let t = row.trim();
    t.starts_with("https://") && !t.contains(' ')
}

/// `text` cut to [`MAX_BODY_ROWS`] rows and [`MAX_BODY_BYTES`] bytes (on a
/// character boundary), with [`BODY_CUT`] where it was cut.
pub(crate) fn bound(text: &str) -> String {
    let mut out = String::new();
    let mut cut = false;
    for (n, line) in text.lines().enumerate() {
        if n == MAX_BODY_ROWS {
            cut = true;
            break;
        }
        let room = MAX_BODY_BYTES.saturating_sub(out.len() + BODY_CUT.len() + 2);
        if line.len() + 1 > room {
            let mut end = room.min(line.len());
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            if n > 0 {
                out.push('\n');
            }
            out.push_str(&line[..end]);
            cut = true;
            break;
        }
        if n > 0 {
            out.push('\n');
        }
        out.push_str(line);
    }
    if cut {
        out.push('\n');
        out.push_str(BODY_CUT);
    }
    out
}
