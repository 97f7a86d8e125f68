//! The inbox card: every prompt waiting for an answer (approvals,
//! questions, checkpoints), oldest first, each with its own buttons, so
//! one card answers what several projects and hosts wait for; and the
//! reminder card for one prompt that waited too long.

use super::{ApprovalView, MAX_BUTTONS, body_len, short};
use crate::bridge::texts::Msg;
use crate::feishu::card::TARGET_BODY_BYTES;
use crate::feishu::markdown::{escape_inline, first_body_bytes};
use crate::i18n::{Lang, Text};
use crate::message::{Block, Button, Message, Style, Tone};
use crate::store::state::{PendingApproval, ProjectName};

/// Prompts one inbox card lists at most (the rest are counted): each
/// carries a row of buttons, and a phone screen holds a handful.
pub const MAX_INBOX_ITEMS: usize = 8;
/// Body bytes of a prompt's question an inbox item shows (its end: the
/// question is at the bottom of the screen).
const ITEM_QUESTION_BYTES: usize = 600;

/// One prompt: where it waits, how long, what it asks, its buttons.
fn item(a: &PendingApproval, host: Option<&str>, now_ms: u64, n: usize) -> Vec<Block> {
    let view = ApprovalView::from(a);
    let waited = now_ms.saturating_sub(a.created_ms) / 60_000;
    let place = match host {
        Some(h) => format!("{}@{}", a.project, h),
        None => a.project.to_string(),
    };
    let question = last_body_bytes(a.question.trim(), ITEM_QUESTION_BYTES);
    let (place, question) = (escape_inline(short(&place)), escape_inline(question));
    let (kind, waited) = (
        super::kind_text(a.kind),
        Msg::WaitingMinutes.with(&[("minutes", &waited.to_string())]),
    );
    let line = |lang: Lang| {
        let (kind, waited) = (kind.get(lang), waited.get(lang));
        format!("**{n}. {place}** · {kind} · {waited}\n{question}")
    };
    let text = Text::both(line(Lang::En), line(Lang::Zh));
    let buttons = (a.options.iter().take(MAX_BUTTONS).enumerate())
        .map(|(i, o)| {
            let kind = if i == 0 { Style::Primary } else { Style::Plain };
            Button::new(short(&o.label), kind, view.action(&o.key).to_value())
        })
        .collect();
    vec![Block::text(text), Block::Buttons(buttons)]
}

/// The end of `text` within `max` body bytes.
fn last_body_bytes(text: &str, max: usize) -> &str {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    // Whole lines read better than a cut one.
    match text[start..].find('\n') {
        Some(i) if start > 0 => &text[start + i + 1..],
        _ => &text[start..],
    }
}

/// A project whose agent said it waits (a `Notification` hook) with no
/// prompt card standing for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitingItem {
    pub project: ProjectName,
    pub host: Option<String>,
    /// A dialog waits for an answer (`permission_prompt`); otherwise the
    /// agent waits for input (`idle_prompt`).
    pub permission: bool,
    /// The agent's own words.
    pub message: String,
    pub since_ms: u64,
}

fn waiting_text(w: &WaitingItem, now_ms: u64, n: usize) -> Text {
    let waited = now_ms.saturating_sub(w.since_ms) / 60_000;
    let place = match &w.host {
        Some(h) => format!("{}@{}", w.project, h),
        None => w.project.to_string(),
    };
    let (what, hint) = if w.permission {
        (Msg::WaitingPermission, Msg::NoCardShowsPrompt)
    } else {
        (Msg::WaitingInput, Msg::SendMessageToGoOn)
    };
    let minutes = Msg::MinutesShort.with(&[("minutes", &waited.to_string())]);
    let (place, message) = (
        escape_inline(short(&place)),
        escape_inline(first_body_bytes(w.message.trim(), ITEM_QUESTION_BYTES)),
    );
    let line = |lang: Lang| {
        format!(
            "**{n}. {place}** · {} · {}\n{message}\n{}",
            what.template(lang),
            minutes.get(lang),
            hint.template(lang)
        )
    };
    Text::both(line(Lang::En), line(Lang::Zh))
}

/// The inbox: `pending` must be oldest first; `host_of` names a project's
/// host (None: this machine); `waiting`, the projects whose agent said it
/// waits, oldest first, follow the prompts.
pub fn inbox_card(
    pending: &[&PendingApproval],
    waiting: &[WaitingItem],
    host_of: impl Fn(&str) -> Option<String>,
    now_ms: u64,
) -> Message {
    let count = (pending.len() + waiting.len()).to_string();
    let title = Msg::InboxTitle.with(&[("n", &count)]);
    let mut card = Message::new(title, Tone::Asking);
    if pending.is_empty() && waiting.is_empty() {
        return card.push(Block::text(Msg::NothingWaits));
    }
    let mut shown = 0;
    for (i, a) in pending.iter().enumerate().take(MAX_INBOX_ITEMS) {
        let host = host_of(a.project.as_str());
        let mut next = card.clone();
        for e in item(a, host.as_deref(), now_ms, i + 1) {
            next = next.push(e);
        }
        if body_len(&next) > TARGET_BODY_BYTES {
            break;
        }
        card = next;
        shown += 1;
    }
    if shown == pending.len().min(MAX_INBOX_ITEMS) {
        for w in waiting.iter().take(MAX_INBOX_ITEMS.saturating_sub(shown)) {
            let next = card
                .clone()
                .push(Block::text(waiting_text(w, now_ms, shown + 1)));
            if body_len(&next) > TARGET_BODY_BYTES {
                break;
            }
            card = next;
            shown += 1;
        }
    }
    let total = pending.len() + waiting.len();
    if shown < total {
        let more = Msg::InboxMore.with(&[("n", &(total - shown).to_string())]);
        card = card.push(Block::text(more));
    }
    card
}

/// A reminder: `a` has waited longer than the chat's reminder time.
pub fn reminder_card(a: &PendingApproval, host: Option<&str>, now_ms: u64) -> Message {
    let waited = now_ms.saturating_sub(a.created_ms) / 60_000;
    let minutes = waited.to_string();
    let title = Msg::StillWaiting.with(&[("minutes", &minutes)]);
    let mut card = Message::new(title, Tone::Asking);
    for e in item(a, host, now_ms, 1) {
        card = card.push(e);
    }
    card
}
