//! Card JSON 2.0: a typed model that serializes to exactly the keys Feishu
//! accepts (unknown properties are an error there), plus builders for every
//! card the bridge sends and plain-text/markdown renderings for the console.
//!
//! Shape: `{"schema":"2.0","config":{"update_multi":true},"header":{…},"body":{"elements":[…]}}`.
//! There is no `action` container in 2.0: buttons sit in a `column_set` row.

use serde::Serialize;
use serde_json::{Value, json};

use super::paginate::{self, escape_code_block};

/// Header colour. Feishu names, see REFERENCE.md §2.
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

    pub fn link_button(label: impl Into<String>, url: impl Into<String>) -> Self {
        Element::Button {
            text: PlainText::new(label),
            kind: ButtonKind::Default,
            behaviors: vec![Behavior::OpenUrl {
                default_url: url.into(),
            }],
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

    /// Every callback value on the card, in order (tests and the console use it).
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
    let mut card = Card::new(title, Template::Blue).push(Element::markdown(line));
    if !tail.trim().is_empty() {
        let tail = paginate::last_bytes(tail, PROGRESS_TAIL_BYTES);
        card = card.push(Element::markdown(format!(
            "```\n{}\n```",
            escape_code_block(tail)
        )));
    }
    card
}

/// How much recent output a progress card shows, in bytes: enough context,
/// far below the 30 KB card limit.
pub const PROGRESS_TAIL_BYTES: usize = 4 * 1024;

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
    fn subtitle(&self) -> String {
        format!("{} · {} · {}", self.project, self.session, self.kind)
    }

    fn question_md(&self) -> String {
        let q = paginate::last_bytes(&self.question, APPROVAL_QUESTION_BYTES);
        format!("```\n{}\n```", escape_code_block(q))
    }
}

/// Longest question text an approval card shows, in bytes (the tail is kept:
/// the question is at the bottom of the screen).
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
        .enumerate()
        .map(|(i, (key, label))| {
            let kind = if i == 0 {
                ButtonKind::Primary
            } else {
                ButtonKind::Default
            };
            Element::callback_button(label.clone(), kind, approval_value(spec, key))
        })
        .collect();
    Card::new("Approval needed", Template::Orange)
        .subtitle(spec.subtitle())
        .push(Element::markdown(spec.question_md()))
        .push(Element::row(buttons))
}

/// Grey: the approval was answered from chat; buttons removed.
pub fn approval_resolved_card(spec: &ApprovalSpec, who: &str, choice: &str, when: &str) -> Card {
    Card::new("Approval answered", Template::Grey)
        .subtitle(spec.subtitle())
        .push(Element::markdown(spec.question_md()))
        .push(Element::note(format!(
            "{} chose **{}** at {}",
            paginate::escape_inline(who),
            paginate::escape_inline(choice),
            paginate::escape_inline(when)
        )))
}

/// Grey: the prompt disappeared (answered in the terminal); buttons removed.
pub fn approval_gone_card(spec: &ApprovalSpec) -> Card {
    Card::new("Approval no longer pending", Template::Grey)
        .subtitle(spec.subtitle())
        .push(Element::markdown(spec.question_md()))
        .push(Element::note("Answered in the terminal."))
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

/// Longest raw error text an error card shows, in bytes (the tail is kept).
pub const ERROR_TEXT_BYTES: usize = 16 * 1024;

/// Red: the raw error in a code block, guidance, and buttons (Retry, Projects, Help…).
pub fn error_card(
    title: &str,
    error_text: &str,
    guidance_markdown: &str,
    buttons: Vec<ActionButton>,
) -> Card {
    let err = paginate::last_bytes(error_text, ERROR_TEXT_BYTES);
    let mut card = Card::new(title, Template::Red).push(Element::markdown(format!(
        "```\n{}\n```",
        escape_code_block(err)
    )));
    if !guidance_markdown.trim().is_empty() {
        card = card.push(Element::markdown(guidance_markdown));
    }
    if !buttons.is_empty() {
        let row = buttons
            .into_iter()
            .map(|b| Element::callback_button(b.label, ButtonKind::Default, b.value))
            .collect();
        card = card.push(Element::row(row));
    }
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
        Some(c) => format!("Current project: **{}**", paginate::escape_inline(c)),
        None => "No current project.".to_string(),
    };
    card = card.push(Element::markdown(current_md));
    card.push(Element::SelectStatic {
        placeholder: PlainText::new("Choose a project"),
        options: projects
            .iter()
            .map(|p| SelectOption {
                text: PlainText::new(p.clone()),
                value: p.clone(),
            })
            .collect(),
        initial_option: current
            .filter(|c| projects.iter().any(|p| p == c))
            .map(str::to_string),
        behaviors: vec![Behavior::Callback {
            value: json!({"action": "select_project"}),
        }],
    })
}

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
    fn link_button_and_note_shape() {
        let v = serde_json::to_value(Element::link_button("Docs", "https://example.com")).unwrap();
        assert_eq!(
            v,
            json!({"tag": "button", "text": {"tag": "plain_text", "content": "Docs"}, "type": "default",
                   "behaviors": [{"type": "open_url", "default_url": "https://example.com"}]})
        );
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
}
