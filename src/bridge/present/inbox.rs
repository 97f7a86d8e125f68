//! The inbox card: every prompt waiting for an answer (approvals,
//! questions, checkpoints), oldest first, each with its own buttons, so
//! one card answers what several projects and hosts wait for; and the
//! reminder card for one prompt that waited too long.

use super::{ApprovalView, ButtonKind, Card, Element, MAX_BUTTONS, Template, body_len, short};
use crate::feishu::card::TARGET_BODY_BYTES;
use crate::feishu::markdown::{escape_inline, first_body_bytes};
use crate::store::state::PendingApproval;

/// Prompts one inbox card lists at most (the rest are counted): each
/// carries a row of buttons, and a phone screen holds a handful.
pub const MAX_INBOX_ITEMS: usize = 8;
/// Body bytes of a prompt's question an inbox item shows (its end: the
/// question is at the bottom of the screen).
const ITEM_QUESTION_BYTES: usize = 600;

/// One prompt: where it waits, how long, what it asks, its buttons.
fn item(a: &PendingApproval, host: Option<&str>, now_ms: u64, n: usize) -> Vec<Element> {
    let view = ApprovalView::from(a);
    let waited = now_ms.saturating_sub(a.created_ms) / 60_000;
    let place = match host {
        Some(h) => format!("{}@{}", a.project, h),
        None => a.project.to_string(),
    };
    let question = last_body_bytes(a.question.trim(), ITEM_QUESTION_BYTES);
    let text = format!(
        "**{n}. {}** · {} · waiting {waited} min\n{}",
        escape_inline(short(&place)),
        escape_inline(short(&a.kind.to_string())),
        escape_inline(question)
    );
    let buttons = (a.options.iter().take(MAX_BUTTONS).enumerate())
        .map(|(i, o)| {
            let kind = if i == 0 {
                ButtonKind::Primary
            } else {
                ButtonKind::Default
            };
            Element::callback_button(short(&o.label), kind, view.action(&o.key).to_value())
        })
        .collect();
    vec![Element::markdown(text), Element::row(buttons)]
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
    pub project: String,
    pub host: Option<String>,
    /// A dialog waits for an answer (`permission_prompt`); otherwise the
    /// agent waits for input (`idle_prompt`).
    pub permission: bool,
    /// The agent's own words.
    pub message: String,
    pub since_ms: u64,
}

fn waiting_text(w: &WaitingItem, now_ms: u64, n: usize) -> String {
    let waited = now_ms.saturating_sub(w.since_ms) / 60_000;
    let place = match &w.host {
        Some(h) => format!("{}@{}", w.project, h),
        None => w.project.clone(),
    };
    let (what, hint) = if w.permission {
        (
            "waiting for permission",
            "No card shows this prompt: see it with `/gsd:screen`, answer with `/gsd:keys`.",
        )
    } else {
        ("waiting for input", "Send it a message to go on.")
    };
    format!(
        "**{n}. {}** · {what} · {waited} min\n{}\n{hint}",
        escape_inline(short(&place)),
        escape_inline(first_body_bytes(w.message.trim(), ITEM_QUESTION_BYTES))
    )
}

/// The inbox: `pending` must be oldest first; `host_of` names a project's
/// host (None: this machine); `waiting`, the projects whose agent said it
/// waits, oldest first, follow the prompts.
pub fn inbox_card(
    pending: &[&PendingApproval],
    waiting: &[WaitingItem],
    host_of: impl Fn(&str) -> Option<String>,
    now_ms: u64,
) -> Card {
    let title = format!("Inbox: {} waiting", pending.len() + waiting.len());
    let mut card = Card::new(title, Template::Orange);
    if pending.is_empty() && waiting.is_empty() {
        return card.push(Element::markdown("Nothing waits for an answer."));
    }
    let mut shown = 0;
    for (i, a) in pending.iter().enumerate().take(MAX_INBOX_ITEMS) {
        let host = host_of(&a.project);
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
                .push(Element::markdown(waiting_text(w, now_ms, shown + 1)));
            if body_len(&next) > TARGET_BODY_BYTES {
                break;
            }
            card = next;
            shown += 1;
        }
    }
    let total = pending.len() + waiting.len();
    if shown < total {
        let more = format!(
            "…and {} more; answer these first, then send `/gsd:inbox` again.",
            total - shown
        );
        card = card.push(Element::markdown(first_body_bytes(&more, 256)));
    }
    card
}

/// A reminder: `a` has waited longer than the chat's reminder time.
pub fn reminder_card(a: &PendingApproval, host: Option<&str>, now_ms: u64) -> Card {
    let waited = now_ms.saturating_sub(a.created_ms) / 60_000;
    let mut card = Card::new(format!("Still waiting ({waited} min)"), Template::Orange);
    for e in item(a, host, now_ms, 1) {
        card = card.push(e);
    }
    card
}
