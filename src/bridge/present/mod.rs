//! The presenter: every card the bridge sends, built from domain values
//! (an approval record, a turn's result, an error, a project list), for
//! the daemon's core and for `clawmux run` (`run_once::Outcome::cards`)
//! alike. Cards are channel-neutral messages ([`crate::message`]) fitted
//! to Feishu's request-body budget ([`TARGET_BODY_BYTES`], the strictest
//! channel's): text is cut, never the card refused. Buttons carry a
//! [`CardAction`].
//!
//! It sits below the project actors and the outbox: it knows the state's
//! records and the message model, nothing that runs.
//!
//! - [`action`]: the tagged value a button carries, and its parsing.
//! - [`stream`]: the streamed answer card of a running turn.
//! - [`inbox`]: every prompt waiting for an answer, and reminders.
//! - [`stall`]: the status card of a command whose agent shows nothing new.
//! - [`footer`]: the turn footer under a result (duration, reported figures).
//! - [`words`]: domain values (errors, modes, durations, times) in the chat's words.

pub mod action;
#[cfg(test)]
pub mod english_check;
pub mod footer;
pub mod inbox;
pub mod stall;
pub mod stream;
pub mod words;

pub use action::{ApprovalChoice, CardAction, CardActionError, CommandChoice, InterruptChoice};

use crate::feishu::card::{TARGET_BODY_BYTES, body_len};
use crate::feishu::markdown::{code_block_head, code_block_tail, escape_inline, first_body_bytes};
use crate::feishu::paginate::paginate;
use crate::i18n::Text;
use crate::message::{Block, Button, Menu, MenuOption, Message, Style, Tone};
use crate::store::state::{
    ApprovalId, ApprovalKind, ApprovalOption, JobId, PendingApproval, ProjectName, SessionName,
};

use super::texts::Msg;

/// How much recent output a progress card shows, in request body bytes:
/// enough context, far below the 30 KB limit.
pub const PROGRESS_TAIL_BYTES: usize = 4 * 1024;
/// Longest command a refusal's suggestion button carries, in bytes: a
/// GSD command and its arguments; longer ones are not offered.
pub const MAX_SUGGESTED_COMMAND_BYTES: usize = 512;

/// Longest title, in body bytes (longer ones are cut).
pub const MAX_TITLE_BODY_BYTES: usize = 512;
/// Longest inline text (a stage, a name, a button label), in body bytes
/// before markdown escaping (which at most multiplies it by 6).
pub const MAX_INLINE_BODY_BYTES: usize = 256;
/// Most buttons or menu options one card carries.
pub const MAX_BUTTONS: usize = 10;
/// Longest guidance text under an error, in body bytes.
pub const GUIDANCE_BODY_BYTES: usize = 4 * 1024;
/// Lines of output a result summary shows from each end.
pub const SUMMARY_LINES: usize = 20;
/// Body bytes each end of a result summary may use.
pub const SUMMARY_PART_BYTES: usize = 8 * 1024;
/// Longest question text an approval card shows, in body bytes (the tail is
/// kept: the question is at the bottom of the screen).
pub const APPROVAL_QUESTION_BYTES: usize = 16 * 1024;
/// Longest error text an error card shows, in body bytes (the tail is kept).
pub const ERROR_TEXT_BYTES: usize = 16 * 1024;
/// Most projects a projects menu offers.
pub const MAX_PROJECT_OPTIONS: usize = 100;
/// Most of the raw screen a result's screen panel shows, in body bytes (its
/// bottom rows are kept): a full-size pane, while the answer keeps the room.
pub const SCREEN_PANEL_BYTES: usize = 12 * 1024;
/// Least room worth a screen panel on a result's last page, in body bytes;
/// with less, the panel goes on a card of its own.
pub const MIN_SCREEN_PANEL_BYTES: usize = 2 * 1024;

fn short_title(title: &str) -> &str {
    first_body_bytes(title, MAX_TITLE_BODY_BYTES)
}

fn short(text: &str) -> &str {
    first_body_bytes(text, MAX_INLINE_BODY_BYTES)
}

/// Body bytes left for the text of one more markdown element on `card`
/// (as built so far), up to `cap`: the element's own JSON is counted.
fn room_on(card: &Message, cap: usize) -> usize {
    let with_element = card.clone().push(Block::text(""));
    TARGET_BODY_BYTES
        .saturating_sub(body_len(&with_element))
        .min(cap)
}

fn first_page(cards: Vec<Message>, title: Text, tone: Tone) -> Message {
    cards
        .into_iter()
        .next()
        .unwrap_or_else(|| Message::new(title, tone))
}

// ---------------------------------------------------------------------------
// Results and information.

/// Result of a finished turn: green, the answer paginated (one card per
/// page). The raw screen, when given, goes in a closed panel under the
/// answer on the last page (on a card of its own if that page is full).
pub fn result_cards(title: &str, markdown: impl Into<Text>, screen: Option<&str>) -> Vec<Message> {
    let mut cards = paginate(title, Tone::Done, markdown);
    let Some(screen) = screen.map(str::trim_end).filter(|s| !s.trim().is_empty()) else {
        return cards;
    };
    if let Some(last) = cards.last_mut()
        && let Some(with_panel) = with_screen_panel(last, screen)
    {
        *last = with_panel;
        return cards;
    }
    let own = Message::new(short_title(title), Tone::Done);
    cards.extend(with_screen_panel(&own, screen));
    cards
}

/// `card` with the tail of `screen` in a closed panel, if the card has room.
fn with_screen_panel(card: &Message, screen: &str) -> Option<Message> {
    let panel = |content: String| Block::folded(Msg::ScreenPanel, vec![Block::text(content)]);
    let empty = card.clone().push(panel(String::new()));
    let room = TARGET_BODY_BYTES
        .saturating_sub(body_len(&empty))
        .min(SCREEN_PANEL_BYTES);
    (room >= MIN_SCREEN_PANEL_BYTES)
        .then(|| card.clone().push(panel(code_block_tail(screen, room))))
}

/// Any informational text: blue, paginated.
pub fn info_cards(title: impl Into<Text>, markdown: impl Into<Text>) -> Vec<Message> {
    paginate(title, Tone::Info, markdown)
}

/// A short informational card (first page only if the text is long).
pub fn info_card(title: impl Into<Text>, markdown: impl Into<Text>) -> Message {
    let title = title.into();
    first_page(info_cards(title.clone(), markdown), title, Tone::Info)
}

/// Work in progress: blue, a progress line and the latest output tail.
/// `percent` is shown as a bar when known.
pub fn progress_card(
    title: impl Into<Text>,
    stage: impl Into<Text>,
    percent: Option<u8>,
    tail: &str,
) -> Message {
    let bar = percent.map(|p| {
        let p = p.min(100);
        let filled = usize::from(p) / 10;
        format!("  `{}{}` {p}%", "█".repeat(filled), "░".repeat(10 - filled))
    });
    let line = stage.into().map(|stage| {
        let stage = first_body_bytes(stage, MAX_INLINE_BODY_BYTES);
        format!(
            "**{}**{}",
            escape_inline(stage),
            bar.as_deref().unwrap_or("")
        )
    });
    let title = title.into().map(|t| short_title(t).to_string());
    let mut card = Message::new(title, Tone::Info).push(Block::text(line));
    if !tail.trim().is_empty() {
        card = card.push(Block::text(code_block_tail(tail, PROGRESS_TAIL_BYTES)));
    }
    card
}

/// A progress card with where the GSD project stands, from its planning
/// files (`phase 2 of 3 (Cart) · plan 2 of 3 · …`).
pub fn with_planning(card: Message, planning: &Text) -> Message {
    let line = planning.map(|l| escape_inline(first_body_bytes(l, MAX_INLINE_BODY_BYTES)));
    let note = Msg::GsdLine.with_each(|lang| vec![("line", line.get(lang).to_string())]);
    card.push(Block::note(note))
}

/// Blue: what a project's pane shows right now (`/gsd:screen`), as a code
/// block; a screen too large for a card keeps its bottom rows.
pub fn screen_card(project: &str, screen: &str) -> Message {
    let title = Msg::ScreenOf.with(&[("project", short(project))]);
    let card = Message::new(title, Tone::Info);
    let room = room_on(&card, TARGET_BODY_BYTES);
    card.push(Block::text(code_block_tail(screen.trim_end(), room)))
}

/// Blue: a project's pane as a picture (`/gsd:screen` on Feishu), its text
/// in a closed panel under it; the picture is the PNG the outbox entry
/// names (see `screen_picture`).
pub fn screen_picture_card(project: &str, screen: &str) -> Message {
    let title = Msg::ScreenOf.with(&[("project", short(project))]);
    let card = Message::new(title.clone(), Tone::Info).push(Block::Picture { alt: title });
    let panel_title = Msg::ScreenAsText.text();
    let panel_cost = 2 * panel_title.get(crate::i18n::Lang::En).len()
        + panel_title.get(crate::i18n::Lang::Zh).len()
        + 200;
    let room = room_on(&card, TARGET_BODY_BYTES).saturating_sub(panel_cost);
    let text = Block::text(code_block_tail(screen.trim_end(), room));
    card.push(Block::folded(panel_title, vec![text]))
}

/// Green: a long result in brief, its first and last lines and its size,
/// saying the whole output follows as the file `file_name`.
pub fn summary_card(title: &str, output: &str, file_name: &str) -> Message {
    let lines: Vec<&str> = output.lines().collect();
    let n = lines.len();
    let counts = Msg::SummaryCounts.with(&[
        ("lines", &n.to_string()),
        ("bytes", &output.len().to_string()),
        ("file", &escape_inline(short(file_name))),
    ]);
    let mut card = Message::new(short_title(title), Tone::Done).push(Block::text(counts));
    if n <= 2 * SUMMARY_LINES {
        let room = room_on(&card, 2 * SUMMARY_PART_BYTES);
        return card.push(Block::text(code_block_tail(output, room)));
    }
    let head = lines[..SUMMARY_LINES].join("\n");
    let tail = lines[n - SUMMARY_LINES..].join("\n");
    let first = SUMMARY_LINES.to_string();
    card = card.push(Block::note(Msg::FirstLines.with(&[("n", &first)])));
    let room = room_on(&card, SUMMARY_PART_BYTES);
    card = card.push(Block::text(code_block_head(&head, room)));
    let hidden = (n - 2 * SUMMARY_LINES).to_string();
    card = card.push(Block::note(
        Msg::LinesNotShown.with(&[("hidden", &hidden), ("n", &first)]),
    ));
    let room = room_on(&card, SUMMARY_PART_BYTES);
    card.push(Block::text(code_block_tail(&tail, room)))
}

// ---------------------------------------------------------------------------
// Approvals.

/// An approval as its cards show it: borrowed from the state's record or
/// from what a run saw (see `run_once`).
#[derive(Debug, Clone, Copy)]
pub struct ApprovalView<'a> {
    pub id: &'a ApprovalId,
    pub project: &'a ProjectName,
    pub session: &'a SessionName,
    pub kind: ApprovalKind,
    /// What is asked about (the command, the file and diff, the plan).
    pub body: &'a str,
    pub question: &'a str,
    pub options: &'a [ApprovalOption],
}

impl<'a> From<&'a PendingApproval> for ApprovalView<'a> {
    fn from(a: &'a PendingApproval) -> Self {
        ApprovalView {
            id: &a.id,
            project: &a.project,
            session: &a.session,
            kind: a.kind,
            body: &a.body,
            question: &a.question,
            options: &a.options,
        }
    }
}

/// What an approval asks about, in words (`permission`, `权限`).
pub fn kind_text(kind: ApprovalKind) -> Text {
    match kind {
        ApprovalKind::Permission => Msg::KindPermission,
        ApprovalKind::Edit => Msg::KindEdit,
        ApprovalKind::Create => Msg::KindCreate,
        ApprovalKind::Question => Msg::KindQuestion,
        ApprovalKind::Plan => Msg::KindPlan,
        ApprovalKind::Checkpoint => Msg::KindCheckpoint,
        ApprovalKind::Dialog => Msg::KindDialog,
    }
    .text()
}

impl ApprovalView<'_> {
    fn subtitle(&self) -> Text {
        let (project, session) = (short(self.project.as_str()), short(self.session.as_str()));
        kind_text(self.kind).map(|k| format!("{project} · {session} · {k}"))
    }

    /// What is asked about, then the question.
    fn question_text(&self) -> String {
        match self.body.trim() {
            "" => self.question.to_string(),
            body => format!("{body}\n\n{}", self.question),
        }
    }

    /// The action of the button for option `key`.
    pub fn action(&self, key: &str) -> CardAction {
        CardAction::Approval(ApprovalChoice {
            approval_id: self.id.clone(),
            project: self.project.clone(),
            session: self.session.clone(),
            option: key.to_string(),
        })
    }

    /// Puts the question (its tail, as a code block) at the top of `card`,
    /// with what room the rest of the card leaves.
    fn with_question(&self, card: Message) -> Message {
        let room = room_on(&card, APPROVAL_QUESTION_BYTES);
        let mut card = card;
        card.blocks
            .insert(0, Block::text(code_block_tail(&self.question_text(), room)));
        card
    }
}

/// Orange: what is asked, and one button per option.
pub fn approval_card<'a>(approval: impl Into<ApprovalView<'a>>) -> Message {
    let a = approval.into();
    let buttons = a
        .options
        .iter()
        .take(MAX_BUTTONS)
        .enumerate()
        .map(|(i, o)| {
            let kind = if i == 0 { Style::Primary } else { Style::Plain };
            Button::new(short(&o.label), kind, a.action(&o.key).to_value())
        })
        .collect();
    let mut card = Message::new(Msg::ApprovalNeeded, Tone::Asking)
        .subtitle(a.subtitle())
        .push(Block::Buttons(buttons));
    if a.options.iter().any(|o| o.ticked().is_some()) {
        card = card.push(Block::note(Msg::SeveralAtOnce));
    }
    a.with_question(card)
}

/// Grey: the approval was answered from chat; buttons removed.
pub fn approval_resolved_card<'a>(
    approval: impl Into<ApprovalView<'a>>,
    who: &str,
    choice: &str,
    when: &str,
) -> Message {
    let a = approval.into();
    let card = Message::new(Msg::ApprovalAnswered, Tone::Closed)
        .subtitle(a.subtitle())
        .push(Block::note(Msg::ChoseAt.with(&[
            ("who", &escape_inline(short(who))),
            ("choice", &escape_inline(short(choice))),
            ("when", &escape_inline(short(when))),
        ])));
    a.with_question(card)
}

/// Grey: the prompt disappeared (answered in the terminal); buttons removed.
pub fn approval_gone_card<'a>(approval: impl Into<ApprovalView<'a>>) -> Message {
    let a = approval.into();
    let card = Message::new(Msg::ApprovalGone, Tone::Closed)
        .subtitle(a.subtitle())
        .push(Block::note(Msg::AnsweredInTerminal));
    a.with_question(card)
}

// ---------------------------------------------------------------------------
// Errors and menus.

/// The progress card of a running command, with its Interrupt button
/// (the click comes back as [`CardAction::Interrupt`]).
pub fn with_interrupt(card: Message, project: &ProjectName, job: &JobId) -> Message {
    let action = CardAction::Interrupt(InterruptChoice {
        project: project.clone(),
        job: job.clone(),
    });
    let button = Button::new(Msg::Interrupt, Style::Plain, action.to_value());
    card.push(Block::Buttons(vec![button]))
}

/// A guidance button on an error card.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionButton {
    pub label: Text,
    pub action: CardAction,
}

impl ActionButton {
    pub fn new(label: impl Into<Text>, action: CardAction) -> Self {
        ActionButton {
            label: label.into(),
            action,
        }
    }
}

/// Red: the raw error in a code block, guidance, and buttons (Projects, Help…).
pub fn error_card(
    title: impl Into<Text>,
    error_text: impl Into<Text>,
    guidance_markdown: impl Into<Text>,
    buttons: Vec<ActionButton>,
) -> Message {
    let title = title.into().map(|t| short_title(t).to_string());
    let mut card = Message::new(title, Tone::Failed);
    let guidance = guidance_markdown.into();
    if !guidance.get(crate::i18n::Lang::En).trim().is_empty() {
        let guidance = guidance.map(|g| first_body_bytes(g, GUIDANCE_BODY_BYTES).to_string());
        card = card.push(Block::text(guidance));
    }
    if !buttons.is_empty() {
        let row = buttons
            .into_iter()
            .take(MAX_BUTTONS)
            .map(|b| {
                let label = b.label.map(|l| short(l).to_string());
                Button::new(label, Style::Plain, b.action.to_value())
            })
            .collect();
        card = card.push(Block::Buttons(row));
    }
    let error_text = error_text.into();
    // Both languages share the room when the text is translated.
    let share = if error_text.is_literal() {
        1
    } else {
        crate::feishu::paginate::TEXTS_PER_I18N
    };
    let room = room_on(&card, ERROR_TEXT_BYTES) / share;
    card.blocks
        .insert(0, Block::text(error_text.map(|e| code_block_tail(e, room))));
    card
}

/// Blue: a select menu of projects; choosing one sends
/// [`CardAction::SelectProject`] with the chosen name as the click's option.
pub fn projects_card(projects: &[ProjectName], current: Option<&str>) -> Message {
    let mut card = Message::new(Msg::Projects, Tone::Info);
    if projects.is_empty() {
        return card.push(Block::text(Msg::NoProjectsConfigured));
    }
    let current_md = match current {
        Some(c) => Msg::CurrentProject.with(&[("project", &escape_inline(short(c)))]),
        None => Msg::NoCurrentProject.text(),
    };
    card = card.push(Block::text(current_md));
    // Options are values to send back, so they are never cut: a list too
    // long for one card shows the first ones that fit and says so.
    let mut shown = projects.len().min(MAX_PROJECT_OPTIONS);
    loop {
        let menu = Block::Menu(Menu {
            placeholder: Msg::ChooseProject.into(),
            options: projects[..shown]
                .iter()
                .map(|p| MenuOption {
                    label: p.as_str().into(),
                    value: p.to_string(),
                })
                .collect(),
            initial: current
                .filter(|c| projects[..shown].iter().any(|p| p == c))
                .map(str::to_string),
            action: CardAction::SelectProject.to_value(),
        });
        let mut out = card.clone().push(menu);
        if shown < projects.len() {
            let more = (projects.len() - shown).to_string();
            out = out.push(Block::note(Msg::MoreProjects.with(&[("n", &more)])));
        }
        if shown == 0 || body_len(&out) <= TARGET_BODY_BYTES {
            return out;
        }
        shown /= 2;
    }
}

#[cfg(test)]
mod tests;

/// The command an agent's refusal suggests: `/gsd-plan-phase` from
/// Claude Code's `Unknown command: /gsd:plan-phase. Did you mean
/// /gsd-plan-phase?`.
pub fn suggested_command(refusal: &str) -> Option<&str> {
    let (_, rest) = refusal.split_once("Did you mean ")?;
    let word = rest.split_whitespace().next()?;
    let word = word.trim_end_matches(['?', '.', ',']).trim_matches('`');
    (word.starts_with('/') && word.len() > 1 && !word.chars().any(char::is_control)).then_some(word)
}

/// The suggestion with the refused command's arguments (`/gsd:plan-phase
/// 2` refused, `/gsd-plan-phase` suggested: `/gsd-plan-phase 2`).
pub fn with_arguments(suggestion: &str, refused: &str) -> String {
    let args = refused
        .trim()
        .split_once(char::is_whitespace)
        .map(|(_, a)| a.trim())
        .unwrap_or("");
    if args.is_empty() {
        suggestion.to_string()
    } else {
        format!("{suggestion} {args}")
    }
}

/// The card of a command the agent refused: its words, what to check, and
/// a button that sends the command the agent suggested (with the refused
/// command's arguments), before the usual ones.
pub fn refusal_card(
    title: impl Into<Text>,
    refusal: &str,
    guidance: impl Into<Text>,
    project: &ProjectName,
    refused: &str,
    mut buttons: Vec<ActionButton>,
) -> Message {
    if let Some(s) = suggested_command(refusal) {
        let command = with_arguments(s, refused);
        if command.len() <= MAX_SUGGESTED_COMMAND_BYTES {
            let choice = CommandChoice {
                project: project.clone(),
                command: command.clone(),
            };
            buttons.insert(
                0,
                ActionButton::new(
                    Msg::RunCommand.with(&[("command", &command)]),
                    CardAction::Command(choice),
                ),
            );
        }
    }
    error_card(title, refusal, guidance, buttons)
}
