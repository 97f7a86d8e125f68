//! Card JSON 2.0 as a typed model: it serializes to exactly the keys Feishu
//! accepts (unknown properties are an error there), measures what a card
//! costs against the request-body limit, and renders a card as plain text
//! or markdown for the console. What the bridge puts on its cards is the
//! presenter's business (`bridge::present`), not this module's.
//!
//! Shape: `{"schema":"2.0","config":{"update_multi":true},"header":{…},"body":{"elements":[…]}}`.
//! There is no `action` container in 2.0: buttons sit in a `column_set` row.

use serde::Serialize;
use serde_json::Value;

use super::markdown::{json_escaped_len, unescape_code_text};

/// Feishu rejects a card or rich-text message whose request body is larger
/// than this, in bytes (error 230025).
pub const MAX_REQUEST_BODY_BYTES: usize = 30 * 1024;

/// What the rest of a message request adds to the escaped card, in bytes:
/// `{"receive_id":…,"msg_type":"interactive","content":"…","uuid":…}` with a
/// receive id of up to 100 bytes and a uuid of up to 50 (Feishu's limit).
pub const MAX_ENVELOPE_BYTES: usize = 256;

/// What a card aims for, in request body bytes: 2 KB under the limit, so a
/// note pushed onto a built card, or a limit counted as 30 000 bytes, still fits.
pub const TARGET_BODY_BYTES: usize = 28 * 1024;

/// Largest request body a message with this card can have, in bytes:
/// its JSON escaped as a string, plus the envelope.
pub fn body_len(card: &Card) -> usize {
    json_escaped_len(card.to_json().as_bytes()) + 2 + MAX_ENVELOPE_BYTES
}

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
    /// A panel that shows only its header until the reader opens it.
    /// Feishu's card JSON 2.0 documents it as `tag: "collapsible_panel"`,
    /// `expanded` (optional boolean, false when absent: closed),
    /// `header.title` (a `plain_text` or `markdown` text object, shown
    /// always) and `elements` (the components inside; a `form` may not be
    /// one, and containers nest at most five deep). Only these keys are
    /// written: the optional styling ones (background, border, padding,
    /// icon) are left to their defaults.
    CollapsiblePanel {
        expanded: bool,
        header: PanelHeader,
        elements: Vec<Element>,
    },
    /// A picture uploaded with `im/v1/images`. Card JSON 2.0's `img`:
    /// `img_key` and `alt` (hover text) are required; `scale_type:
    /// fit_horizontal` shows it whole, uncropped; `preview` opens it large
    /// on a click.
    Img {
        img_key: String,
        alt: PlainText,
        scale_type: &'static str,
        preview: bool,
    },
}

/// The always-visible header of a [`Element::CollapsiblePanel`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PanelHeader {
    pub title: PlainText,
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

    /// A closed panel titled `title` holding `elements`.
    pub fn collapsed(title: impl Into<String>, elements: Vec<Element>) -> Self {
        Element::CollapsiblePanel {
            expanded: false,
            header: PanelHeader {
                title: PlainText::new(title),
            },
            elements,
        }
    }

    /// A picture shown whole, `alt` its text for readers that cannot see it.
    pub fn image(img_key: impl Into<String>, alt: impl Into<String>) -> Self {
        Element::Img {
            img_key: img_key.into(),
            alt: PlainText::new(alt),
            scale_type: "fit_horizontal",
            preview: true,
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
                    Element::CollapsiblePanel { elements, .. } => walk(elements, out),
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
                    unescape_code_text(content)
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
            // Text cannot be opened: a closed panel stays a header line,
            // an open one shows what is inside.
            Element::CollapsiblePanel {
                expanded,
                header,
                elements,
            } => {
                let mark = if *expanded { '▾' } else { '▸' };
                let title = &header.title.content;
                if markdown {
                    out.push_str(&format!("{mark} _{title}_\n"));
                } else {
                    out.push_str(&format!("{mark} {title}\n"));
                }
                if *expanded {
                    render_elements(elements, markdown, button_no, out);
                }
            }
            // Text has no pictures: the alt text stands in.
            Element::Img { alt, .. } => {
                out.push_str(&format!("[picture: {}]\n", alt.content));
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    #[test]
    fn collapsed_panel_shape_and_text() {
        let panel = Element::collapsed("Screen", vec![Element::markdown("```\nls\n```")]);
        assert_eq!(
            serde_json::to_value(&panel).unwrap(),
            json!({"tag": "collapsible_panel", "expanded": false,
                "header": {"title": {"tag": "plain_text", "content": "Screen"}},
                "elements": [{"tag": "markdown", "content": "```\nls\n```"}]})
        );
        let card = Card::new("Done", Template::Green).push(panel);
        assert_eq!(card.to_text(), "== Done ==\n▸ Screen\n");
        assert_eq!(card.to_markdown(), "**Done**\n▸ _Screen_\n");
        let open = Element::CollapsiblePanel {
            expanded: true,
            header: PanelHeader {
                title: PlainText::new("Screen"),
            },
            elements: vec![Element::markdown("```\nls\n```")],
        };
        let card = Card::new("Done", Template::Green).push(open);
        assert_eq!(card.to_text(), "== Done ==\n▾ Screen\n```\nls\n```\n");
    }

    #[test]
    fn image_shape_and_text() {
        let img = Element::image("img_v3_1", "Screen of web");
        assert_eq!(
            serde_json::to_value(&img).unwrap(),
            json!({"tag": "img", "img_key": "img_v3_1",
                "alt": {"tag": "plain_text", "content": "Screen of web"},
                "scale_type": "fit_horizontal", "preview": true})
        );
        let card = Card::new("Screen", Template::Blue).push(img);
        assert_eq!(card.to_text(), "== Screen ==\n[picture: Screen of web]\n");
    }

    #[test]
    fn body_len_is_the_measured_request() {
        let card = Card::new("q\"\u{1}", Template::Blue).push(Element::markdown("a\"b\\c\n"));
        let body = json!({"receive_id": "oc_".repeat(33), "msg_type": "interactive",
            "content": card.to_json(), "uuid": "u".repeat(50)})
        .to_string();
        assert!(
            body.len() <= body_len(&card),
            "{} > {}",
            body.len(),
            body_len(&card)
        );
        // The envelope is the only slack.
        assert!(body_len(&card) - body.len() < MAX_ENVELOPE_BYTES);
    }
}
