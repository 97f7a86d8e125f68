//! Card JSON 2.0: a typed model that serializes to exactly the keys Feishu
//! accepts (unknown properties are an error there), plus builders for every
//! card the bridge sends and plain-text/markdown renderings for the console.
//!
//! Shape: `{"schema":"2.0","config":{"update_multi":true},"header":{…},"body":{"elements":[…]}}`.
//! There is no `action` container in 2.0: buttons sit in a `column_set` row.
//!
//! Long on purpose: every card the bridge sends is built here, against the
//! one request-body budget.

use serde::Serialize;
use serde_json::{Value, json};

use super::paginate::{
    self, TARGET_BODY_BYTES, body_len, body_text_len, escape_code_block, first_body_bytes,
    last_body_bytes,
};

/// Header colour, by the names Feishu card JSON 2.0 uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Template {
    Blue,
    Green,
    Orange,
    Red,
    Grey,
    Yellow,
}

/// `{"tag":"plain_text","content":…}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlainText {
    tag: &'static str,
    pub content: String,
}

impl PlainText {
    pub fn new(content: impl Into<String>) -> Self {
        Self {
            tag: "plain_text",
            content: content.into(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Config {
    /// Must be true before and after a PATCH, or the update is refused.
    pub update_multi: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Header {
    pub title: PlainText,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subtitle: Option<PlainText>,
    pub template: Template,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Body {
    pub elements: Vec<Element>,
}

/// Button look (`type` in the JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ButtonKind {
    Default,
    Primary,
    Danger,
}

/// What a click does.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Behavior {
    /// Sends `card.action.trigger` with this value to the bot.
    Callback { value: Value },
    /// Opens a link.
    OpenUrl { default_url: String },
}

/// One option of a select menu.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SelectOption {
    pub text: PlainText,
    pub value: String,
}

/// A column of a `column_set`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Column {
    tag: &'static str,
    width: &'static str,
    pub elements: Vec<Element>,
}

/// A body element. Serialized with its `tag`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "tag", rename_all = "snake_case")]
pub enum Element {
    Markdown {
        content: String,
        /// `Some("notation")` renders a small grey note.
        #[serde(skip_serializing_if = "Option::is_none")]
        text_size: Option<&'static str>,
    },
    Hr,
    ColumnSet {
        flex_mode: &'static str,
        columns: Vec<Column>,
    },
    Button {
        text: PlainText,
        #[serde(rename = "type")]
        kind: ButtonKind,
        behaviors: Vec<Behavior>,
    },
    SelectStatic {
        placeholder: PlainText,
        options: Vec<SelectOption>,
        #[serde(skip_serializing_if = "Option::is_none")]
        initial_option: Option<String>,
        behaviors: Vec<Behavior>,
    },
}

impl Element {
    pub fn markdown(content: impl Into<String>) -> Self {
        Element::Markdown {
            content: content.into(),
            text_size: None,
        }
    }

    pub fn note(content: impl Into<String>) -> Self {
        Element::Markdown {
            content: content.into(),
            text_size: Some("notation"),
        }
    }

    /// A button that sends `value` back as a card action.
    pub fn callback_button(label: impl Into<String>, kind: ButtonKind, value: Value) -> Self {
        Element::Button {
            text: PlainText::new(label),
            kind,
            behaviors: vec![Behavior::Callback { value }],
        }
    }

    /// A row of elements (buttons), one auto-width column each, wrapping on
    /// narrow screens.
    pub fn row(items: Vec<Element>) -> Self {
        Element::ColumnSet {
            flex_mode: "flow",
            columns: items
                .into_iter()
                .map(|e| Column {
                    tag: "column",
                    width: "auto",
                    elements: vec![e],
                })
                .collect(),
        }
    }
}

/// A whole card, ready for `serde_json::to_string`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Card {
    schema: &'static str,
    pub config: Config,
    pub header: Header,
    pub body: Body,
}

impl Card {
    pub fn new(title: impl Into<String>, template: Template) -> Self {
        Card {
            schema: "2.0",
            config: Config { update_multi: true },
            header: Header {
                title: PlainText::new(title),
                subtitle: None,
                template,
            },
            body: Body {
                elements: Vec::new(),
            },
        }
    }

    pub fn subtitle(mut self, subtitle: impl Into<String>) -> Self {
        self.header.subtitle = Some(PlainText::new(subtitle));
        self
    }

    pub fn push(mut self, element: Element) -> Self {
        self.body.elements.push(element);
        self
    }

    /// The JSON text sent as message `content`.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| String::from("{}"))
    }

    /// Serialized size in bytes (what Feishu's 30 KB limit counts).
    pub fn json_len(&self) -> usize {
        self.to_json().len()
    }

    /// Readable plain text: title, subtitle, text, buttons as `[1] Yes` lines,
    /// menus as `(a) name` lines. Used by the console channel and `--format plain`.
    pub fn to_text(&self) -> String {
        self.render(false)
    }

    /// The same content as markdown (`**title**`, text kept as markdown).
    pub fn to_markdown(&self) -> String {
        self.render(true)
    }

    fn render(&self, markdown: bool) -> String {
        let mut out = String::new();
        if markdown {
            out.push_str(&format!("**{}**\n", self.header.title.content));
        } else {
            out.push_str(&format!("== {} ==\n", self.header.title.content));
        }
        if let Some(sub) = &self.header.subtitle {
            out.push_str(&sub.content);
            out.push('\n');
        }
        let mut button_no = 0;
        render_elements(&self.body.elements, markdown, &mut button_no, &mut out);
        out
    }

    /// Every callback value on the card, in order.
    #[cfg(test)]
    pub fn callback_values(&self) -> Vec<&Value> {
        fn walk<'a>(els: &'a [Element], out: &mut Vec<&'a Value>) {
            for e in els {
                match e {
                    Element::Button { behaviors, .. } | Element::SelectStatic { behaviors, .. } => {
                        for b in behaviors {
                            if let Behavior::Callback { value } = b {
                                out.push(value);
                            }
                        }
                    }
                    Element::ColumnSet { columns, .. } => {
                        for c in columns {
                            walk(&c.elements, out);
                        }
                    }
                    _ => {}
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.body.elements, &mut out);
        out
    }

    /// All markdown text on the card joined by newlines.
    #[cfg(test)]
    pub fn text(&self) -> String {
        let mut out = Vec::new();
        for e in &self.body.elements {
            if let Element::Markdown { content, .. } = e {
                out.push(content.as_str());
            }
        }
        out.join("\n")
    }
}

fn render_elements(els: &[Element], markdown: bool, button_no: &mut usize, out: &mut String) {
    for e in els {
        match e {
            Element::Markdown { content, .. } => {
                let text = if markdown {
                    content.clone()
                } else {
                    paginate::unescape_code_text(content)
                };
                out.push_str(&text);
                out.push('\n');
            }
            Element::Hr => out.push_str(if markdown { "\n---\n" } else { "----\n" }),
            Element::ColumnSet { columns, .. } => {
                for c in columns {
                    render_elements(&c.elements, markdown, button_no, out);
                }
            }
            Element::Button {
                text, behaviors, ..
            } => {
                *button_no += 1;
                match behaviors.first() {
                    Some(Behavior::OpenUrl { default_url }) => {
                        out.push_str(&format!("[{button_no}] {} <{default_url}>\n", text.content))
                    }
                    _ => out.push_str(&format!("[{button_no}] {}\n", text.content)),
                }
            }
            Element::SelectStatic {
                placeholder,
                options,
                initial_option,
                ..
            } => {
                out.push_str(&format!("{}:\n", placeholder.content));
                for o in options {
                    let mark = if initial_option.as_deref() == Some(o.value.as_str()) {
                        "*"
                    } else {
                        " "
                    };
                    out.push_str(&format!(" {mark} {}\n", o.text.content));
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------
// The bridge's cards.

/// Result of a finished turn: green, paginated (one card per page).
pub fn result_cards(title: &str, markdown: &str) -> Vec<Card> {
    paginate::paginate(title, Template::Green, markdown)
}

/// Any informational text: blue, paginated.
pub fn info_cards(title: &str, markdown: &str) -> Vec<Card> {
    paginate::paginate(title, Template::Blue, markdown)
}

/// A short informational card (first page only if the text is long).
pub fn info_card(title: &str, markdown: &str) -> Card {
    first_page(info_cards(title, markdown), title, Template::Blue)
}

fn first_page(cards: Vec<Card>, title: &str, template: Template) -> Card {
    cards
        .into_iter()
        .next()
        .unwrap_or_else(|| Card::new(title, template))
}

/// Work in progress: blue, a progress line and the latest output tail.
/// `percent` is shown as a bar when known.
pub fn progress_card(title: &str, stage: &str, percent: Option<u8>, tail: &str) -> Card {
    let stage = first_body_bytes(stage, MAX_INLINE_BODY_BYTES);
    let mut line = format!("**{}**", paginate::escape_inline(stage));
    if let Some(p) = percent {
        let p = p.min(100);
        let filled = usize::from(p) / 10;
        line.push_str(&format!(
            "  `{}{}` {p}%",
            "█".repeat(filled),
            "░".repeat(10 - filled)
        ));
    }
    let mut card = Card::new(short_title(title), Template::Blue).push(Element::markdown(line));
    if !tail.trim().is_empty() {
        card = card.push(Element::markdown(code_block_tail(
            tail,
            PROGRESS_TAIL_BYTES,
        )));
    }
    card
}

/// How much recent output a progress card shows, in request body bytes:
/// enough context, far below the 30 KB limit.
pub const PROGRESS_TAIL_BYTES: usize = 4 * 1024;

/// Longest title, in body bytes (longer ones are cut).
pub const MAX_TITLE_BODY_BYTES: usize = 512;
/// Longest inline text (a stage, a name, a button label), in body bytes
/// before markdown escaping (which at most multiplies it by 6).
pub const MAX_INLINE_BODY_BYTES: usize = 256;
/// Most buttons or menu options one card carries.
pub const MAX_BUTTONS: usize = 10;
/// Longest guidance text under an error, in body bytes.
pub const GUIDANCE_BODY_BYTES: usize = 4 * 1024;

fn short_title(title: &str) -> &str {
    first_body_bytes(title, MAX_TITLE_BODY_BYTES)
}

fn short(text: &str) -> &str {
    first_body_bytes(text, MAX_INLINE_BODY_BYTES)
}

/// The tail of `text` as a fenced code block costing at most `budget` body
/// bytes. Escaping adds zero-width spaces, so the tail is taken, escaped,
/// measured, and taken shorter by the excess until it fits.
fn code_block_tail(text: &str, budget: usize) -> String {
    /// Rounds of shortening before giving up on the text (each removes at
    /// least the excess, so a few suffice).
    const MAX_ROUNDS: usize = 16;
    let wrap = |t: &str| format!("```\n{t}\n```");
    let room = budget.saturating_sub(body_text_len(wrap("").as_bytes()));
    let mut take = room;
    for _ in 0..MAX_ROUNDS {
        let escaped = escape_code_block(last_body_bytes(text, take));
        let cost = body_text_len(escaped.as_bytes());
        if cost <= room {
            return wrap(&escaped);
        }
        take = take.saturating_sub(cost - room);
    }
    wrap("")
}

/// The head of `text` as a fenced code block costing at most `budget`
/// body bytes (see [`code_block_tail`]).
fn code_block_head(text: &str, budget: usize) -> String {
    const MAX_ROUNDS: usize = 16;
    let wrap = |t: &str| format!("```\n{t}\n```");
    let room = budget.saturating_sub(body_text_len(wrap("").as_bytes()));
    let mut take = room;
    for _ in 0..MAX_ROUNDS {
        let escaped = escape_code_block(first_body_bytes(text, take));
        let cost = body_text_len(escaped.as_bytes());
        if cost <= room {
            return wrap(&escaped);
        }
        take = take.saturating_sub(cost - room);
    }
    wrap("")
}

/// Blue: what a project's pane shows right now (`/gsd:screen`), as a code
/// block; a screen too large for a card keeps its bottom rows.
pub fn screen_card(project: &str, screen: &str) -> Card {
    let title = format!("Screen of {}", short(project));
    let card = Card::new(title, Template::Blue);
    let room = room_on(&card, TARGET_BODY_BYTES);
    card.push(Element::markdown(code_block_tail(screen.trim_end(), room)))
}

/// Lines of output a result summary shows from each end.
pub const SUMMARY_LINES: usize = 20;
/// Body bytes each end of a result summary may use.
pub const SUMMARY_PART_BYTES: usize = 8 * 1024;

/// Green: a long result in brief, its first and last lines and its size,
/// saying the whole output follows as the file `file_name`.
pub fn summary_card(title: &str, output: &str, file_name: &str) -> Card {
    let lines: Vec<&str> = output.lines().collect();
    let n = lines.len();
    let counts = format!(
        "**{n} lines, {} bytes.** The whole output is in the file `{}` below.",
        output.len(),
        paginate::escape_inline(short(file_name))
    );
    let mut card = Card::new(short_title(title), Template::Green).push(Element::markdown(counts));
    if n <= 2 * SUMMARY_LINES {
        let room = room_on(&card, 2 * SUMMARY_PART_BYTES);
        return card.push(Element::markdown(code_block_tail(output, room)));
    }
    let head = lines[..SUMMARY_LINES].join("\n");
    let tail = lines[n - SUMMARY_LINES..].join("\n");
    card = card.push(Element::note(format!("First {SUMMARY_LINES} lines:")));
    let room = room_on(&card, SUMMARY_PART_BYTES);
    card = card.push(Element::markdown(code_block_head(&head, room)));
    card = card.push(Element::note(format!(
        "… {} lines not shown … last {SUMMARY_LINES} lines:",
        n - 2 * SUMMARY_LINES
    )));
    let room = room_on(&card, SUMMARY_PART_BYTES);
    card.push(Element::markdown(code_block_tail(&tail, room)))
}

/// Body bytes left for the text of one more markdown element on `card`
/// (as built so far), up to `cap`: the element's own JSON is counted.
fn room_on(card: &Card, cap: usize) -> usize {
    let with_element = card.clone().push(Element::markdown(""));
    TARGET_BODY_BYTES
        .saturating_sub(body_len(&with_element))
        .min(cap)
}

/// What an approval card asks.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalSpec {
    pub approval_id: String,
    pub project: String,
    pub session: String,
    /// e.g. "permission", "question", "checkpoint".
    pub kind: String,
    pub question: String,
    /// `(key, label)`: key is what gets typed into the pane (e.g. "1").
    pub options: Vec<(String, String)>,
}

impl ApprovalSpec {
    fn subtitle_short(&self) -> String {
        format!(
            "{} · {} · {}",
            short(&self.project),
            short(&self.session),
            short(&self.kind)
        )
    }
}

/// Puts the question (its tail, as a code block) at `at` on `card`, with
/// what room the rest of the card leaves.
fn with_question(card: Card, at: usize, question: &str) -> Card {
    let room = room_on(&card, APPROVAL_QUESTION_BYTES);
    let mut card = card;
    card.body
        .elements
        .insert(at, Element::markdown(code_block_tail(question, room)));
    card
}

/// Longest question text an approval card shows, in body bytes (the tail is
/// kept: the question is at the bottom of the screen).
pub const APPROVAL_QUESTION_BYTES: usize = 16 * 1024;

/// The callback value of an approval button.
pub fn approval_value(spec: &ApprovalSpec, key: &str) -> Value {
    json!({
        "action": "approval",
        "approval_id": spec.approval_id,
        "project": spec.project,
        "session": spec.session,
        "option": key,
    })
}

/// Orange: the question and one button per option.
pub fn approval_card(spec: &ApprovalSpec) -> Card {
    let buttons = spec
        .options
        .iter()
        .take(MAX_BUTTONS)
        .enumerate()
        .map(|(i, (key, label))| {
            let kind = if i == 0 {
                ButtonKind::Primary
            } else {
                ButtonKind::Default
            };
            Element::callback_button(short(label), kind, approval_value(spec, key))
        })
        .collect();
    let card = Card::new("Approval needed", Template::Orange)
        .subtitle(spec.subtitle_short())
        .push(Element::row(buttons));
    with_question(card, 0, &spec.question)
}

/// Grey: the approval was answered from chat; buttons removed.
pub fn approval_resolved_card(spec: &ApprovalSpec, who: &str, choice: &str, when: &str) -> Card {
    let card = Card::new("Approval answered", Template::Grey)
        .subtitle(spec.subtitle_short())
        .push(Element::note(format!(
            "{} chose **{}** at {}",
            paginate::escape_inline(short(who)),
            paginate::escape_inline(short(choice)),
            paginate::escape_inline(short(when))
        )));
    with_question(card, 0, &spec.question)
}

/// Grey: the prompt disappeared (answered in the terminal); buttons removed.
pub fn approval_gone_card(spec: &ApprovalSpec) -> Card {
    let card = Card::new("Approval no longer pending", Template::Grey)
        .subtitle(spec.subtitle_short())
        .push(Element::note("Answered in the terminal."));
    with_question(card, 0, &spec.question)
}

/// A guidance button on an error card: label and callback value.
#[derive(Debug, Clone, PartialEq)]
pub struct ActionButton {
    pub label: String,
    pub value: Value,
}

impl ActionButton {
    pub fn new(label: impl Into<String>, value: Value) -> Self {
        ActionButton {
            label: label.into(),
            value,
        }
    }
}

/// Longest error text an error card shows, in body bytes (the tail is kept).
pub const ERROR_TEXT_BYTES: usize = 16 * 1024;

/// Red: the raw error in a code block, guidance, and buttons (Retry, Projects, Help…).
pub fn error_card(
    title: &str,
    error_text: &str,
    guidance_markdown: &str,
    buttons: Vec<ActionButton>,
) -> Card {
    let mut card = Card::new(short_title(title), Template::Red);
    if !guidance_markdown.trim().is_empty() {
        let guidance = first_body_bytes(guidance_markdown, GUIDANCE_BODY_BYTES);
        card = card.push(Element::markdown(guidance));
    }
    if !buttons.is_empty() {
        let row = buttons
            .into_iter()
            .take(MAX_BUTTONS)
            .map(|b| Element::callback_button(short(&b.label), ButtonKind::Default, b.value))
            .collect();
        card = card.push(Element::row(row));
    }
    let room = room_on(&card, ERROR_TEXT_BYTES);
    card.body
        .elements
        .insert(0, Element::markdown(code_block_tail(error_text, room)));
    card
}

/// Blue: a select menu of projects; choosing one sends
/// `{"action":"select_project"}` with the chosen name in `action.option`.
pub fn projects_card(projects: &[String], current: Option<&str>) -> Card {
    let mut card = Card::new("Projects", Template::Blue);
    if projects.is_empty() {
        return card.push(Element::markdown("No projects configured."));
    }
    let current_md = match current {
        Some(c) => format!("Current project: **{}**", paginate::escape_inline(short(c))),
        None => "No current project.".to_string(),
    };
    card = card.push(Element::markdown(current_md));
    // Options are values to send back, so they are never cut: a list too
    // long for one card shows the first ones that fit and says so.
    let mut shown = projects.len().min(MAX_PROJECT_OPTIONS);
    loop {
        let menu = Element::SelectStatic {
            placeholder: PlainText::new("Choose a project"),
            options: projects[..shown]
                .iter()
                .map(|p| SelectOption {
                    text: PlainText::new(p.clone()),
                    value: p.clone(),
                })
                .collect(),
            initial_option: current
                .filter(|c| projects[..shown].iter().any(|p| p == c))
                .map(str::to_string),
            behaviors: vec![Behavior::Callback {
                value: json!({"action": "select_project"}),
            }],
        };
        let mut out = card.clone().push(menu);
        if shown < projects.len() {
            out = out.push(Element::note(format!(
                "{} more not shown: `/gsd:status` lists them all.",
                projects.len() - shown
            )));
        }
        if shown == 0 || body_len(&out) <= TARGET_BODY_BYTES {
            return out;
        }
        shown /= 2;
    }
}

/// Most projects a projects menu offers.
pub const MAX_PROJECT_OPTIONS: usize = 100;

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> ApprovalSpec {
        ApprovalSpec {
            approval_id: "a1".into(),
            project: "web".into(),
            session: "s1".into(),
            kind: "permission".into(),
            question: "Do you want to proceed?".into(),
            options: vec![("1".into(), "Yes".into()), ("3".into(), "No".into())],
        }
    }

    #[test]
    fn approval_card_exact_json() {
        let v = serde_json::to_value(approval_card(&spec())).unwrap();
        let expected = json!({
            "schema": "2.0",
            "config": {"update_multi": true},
            "header": {
                "title": {"tag": "plain_text", "content": "Approval needed"},
                "subtitle": {"tag": "plain_text", "content": "web · s1 · permission"},
                "template": "orange"
            },
            "body": {"elements": [
                {"tag": "markdown", "content": "```\nDo you want to proceed?\n```"},
                {"tag": "column_set", "flex_mode": "flow", "columns": [
                    {"tag": "column", "width": "auto", "elements": [
                        {"tag": "button", "text": {"tag": "plain_text", "content": "Yes"}, "type": "primary",
                         "behaviors": [{"type": "callback", "value":
                            {"action": "approval", "approval_id": "a1", "project": "web", "session": "s1", "option": "1"}}]}
                    ]},
                    {"tag": "column", "width": "auto", "elements": [
                        {"tag": "button", "text": {"tag": "plain_text", "content": "No"}, "type": "default",
                         "behaviors": [{"type": "callback", "value":
                            {"action": "approval", "approval_id": "a1", "project": "web", "session": "s1", "option": "3"}}]}
                    ]}
                ]}
            ]}
        });
        assert_eq!(v, expected);
    }

    #[test]
    fn resolved_and_gone_cards_are_grey_without_buttons() {
        for card in [
            approval_resolved_card(&spec(), "alice", "Yes", "12:00"),
            approval_gone_card(&spec()),
        ] {
            assert_eq!(card.header.template, Template::Grey);
            assert!(card.callback_values().is_empty());
            let json = card.to_json();
            assert!(!json.contains("\"button\""), "{json}");
        }
        let text = approval_resolved_card(&spec(), "alice", "Yes", "12:00").to_text();
        assert!(text.contains("alice chose **Yes** at 12:00"), "{text}");
    }

    #[test]
    fn error_card_shape_and_code_block() {
        let card = error_card(
            "Command failed",
            "API Error: 401 ```boom```",
            "Run `/login` in the pane.",
            vec![ActionButton::new("Retry", json!({"action": "retry"}))],
        );
        let v = serde_json::to_value(&card).unwrap();
        assert_eq!(v["header"]["template"], "red");
        let els = v["body"]["elements"].as_array().unwrap();
        let code = els[0]["content"].as_str().unwrap();
        assert!(code.starts_with("```\n") && code.ends_with("\n```"));
        // The fence inside the error text cannot close our block.
        assert_eq!(code.matches("```").count(), 2, "{code}");
        assert_eq!(
            els[1],
            json!({"tag": "markdown", "content": "Run `/login` in the pane."})
        );
        assert_eq!(
            els[2]["columns"][0]["elements"][0]["behaviors"][0]["value"],
            json!({"action": "retry"})
        );
    }

    #[test]
    fn projects_card_select_menu() {
        let card = projects_card(&["api".into(), "web".into()], Some("web"));
        let v = serde_json::to_value(&card).unwrap();
        assert_eq!(
            v["body"]["elements"][1],
            json!({
                "tag": "select_static",
                "placeholder": {"tag": "plain_text", "content": "Choose a project"},
                "options": [
                    {"text": {"tag": "plain_text", "content": "api"}, "value": "api"},
                    {"text": {"tag": "plain_text", "content": "web"}, "value": "web"}
                ],
                "initial_option": "web",
                "behaviors": [{"type": "callback", "value": {"action": "select_project"}}]
            })
        );
        assert!(card.to_text().contains(" * web"));
    }

    #[test]
    fn text_rendering_numbers_buttons() {
        let text = approval_card(&spec()).to_text();
        assert_eq!(
            text,
            "== Approval needed ==\nweb · s1 · permission\n```\nDo you want to proceed?\n```\n[1] Yes\n[2] No\n"
        );
        let md = approval_card(&spec()).to_markdown();
        assert!(md.starts_with("**Approval needed**\n"));
    }

    #[test]
    fn progress_card_has_bar_and_tail() {
        let card = progress_card("Working", "EXECUTING WAVE 1", Some(40), "line a\nline b");
        let v = serde_json::to_value(&card).unwrap();
        assert_eq!(v["header"]["template"], "blue");
        assert_eq!(
            v["body"]["elements"][0]["content"],
            "**EXECUTING WAVE 1**  `████░░░░░░` 40%"
        );
        assert_eq!(
            v["body"]["elements"][1]["content"],
            "```\nline a\nline b\n```"
        );
    }

    #[test]
    fn screen_card_shows_the_pane_as_code() {
        let v = serde_json::to_value(screen_card("web", "❯ ls\n```x```\n\n")).unwrap();
        assert_eq!(v["header"]["title"]["content"], "Screen of web");
        let code = v["body"]["elements"][0]["content"].as_str().unwrap();
        assert!(
            code.starts_with("```\n❯ ls\n") && code.ends_with("\n```"),
            "{code}"
        );
        assert_eq!(code.matches("```").count(), 2, "{code}");
    }

    #[test]
    fn note_shape() {
        let v = serde_json::to_value(Element::note("n")).unwrap();
        assert_eq!(
            v,
            json!({"tag": "markdown", "content": "n", "text_size": "notation"})
        );
        assert_eq!(
            serde_json::to_value(Element::Hr).unwrap(),
            json!({"tag": "hr"})
        );
    }

    use crate::feishu::paginate::MAX_REQUEST_BODY_BYTES;
    use proptest::prelude::*;

    /// Text that is expensive once escaped twice: quotes, backslashes,
    /// control bytes, JSON log lines, backtick runs, multi-byte characters.
    fn hostile() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("\"".to_string()),
            Just("\\".to_string()),
            Just("\u{1}".to_string()),
            Just("\n".to_string()),
            Just("```".to_string()),
            Just("日本語".to_string()),
            Just("*_[]<>&|".to_string()),
            Just(r#"{"level":"error","msg":"\"x\" at C:\\a\\b"}"#.to_string()),
            Just("plain words ".to_string()),
        ];
        (proptest::collection::vec(piece, 1..8), 1usize..6000)
            .prop_map(|(pieces, n)| pieces.concat().repeat(n))
    }

    /// A name as the bridge validates them: at most 64 bytes.
    fn name() -> impl Strategy<Value = String> {
        "[a-z0-9\"\\\u{1}-]{1,64}"
    }

    fn assert_fits(card: &Card) -> Result<(), TestCaseError> {
        let b = body_len(card);
        prop_assert!(b <= TARGET_BODY_BYTES, "body of {b} bytes");
        let body = json!({"receive_id": "oc_".repeat(33), "msg_type": "interactive",
            "content": card.to_json(), "uuid": "u".repeat(50)})
        .to_string();
        prop_assert!(
            body.len() <= MAX_REQUEST_BODY_BYTES,
            "request of {} bytes",
            body.len()
        );
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]
        #[test]
        fn every_builder_fits_on_hostile_text(
            text in hostile(), other in hostile(), small in hostile(),
            id in name(), project in name(), session in name(),
            labels in proptest::collection::vec(hostile(), 0..14),
            projects in proptest::collection::vec(name(), 0..400),
        ) {
            let small = crate::feishu::paginate::first_body_bytes(&small, 3000);
            let spec = ApprovalSpec {
                approval_id: id.clone(),
                project: project.clone(),
                session: session.clone(),
                kind: small.to_string(),
                question: text.clone(),
                options: labels.iter().enumerate().map(|(i, l)| (i.to_string(), l.clone())).collect(),
            };
            assert_fits(&approval_card(&spec))?;
            assert_fits(&approval_resolved_card(&spec, small, &other, small))?;
            assert_fits(&approval_gone_card(&spec))?;
            assert_fits(&progress_card(&other, small, Some(50), &text))?;
            let buttons = labels.iter().map(|l| ActionButton::new(l.clone(), json!({"action": "retry", "project": project}))).collect();
            assert_fits(&error_card(&other, &text, &other, buttons))?;
            assert_fits(&projects_card(&projects, projects.first().map(String::as_str)))?;
            assert_fits(&info_card(&other, &text))?;
            assert_fits(&summary_card(&other, &text, small))?;
            assert_fits(&screen_card(&project, &text))?;
            for c in result_cards(small, &text) {
                assert_fits(&c)?;
            }
        }
    }
}
