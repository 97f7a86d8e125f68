//! Card JSON 2.0 as a typed model: a channel-neutral [`Message`] rendered
//! the way Feishu draws it ([`Card::render`]), serialized to exactly the
//! keys Feishu accepts (unknown properties are an error there), and what a
//! message costs against the request-body limit ([`body_len`]). What the
//! bridge says on its messages is the presenter's business
//! (`bridge::present`), not this module's.
//!
//! Shape: `{"schema":"2.0","config":{"update_multi":true},"header":{…},"body":{"elements":[…]}}`.
//! There is no `action` container in 2.0: buttons sit in a `column_set` row.
//!
//! Languages: every text (a `plain_text` object or a `markdown` element)
//! holds a [`Text`]. Wording in two languages is written as Feishu's
//! local multi-language fields: `content` (English, what a client in any
//! other language shows) and `i18n_content` (`zh_cn` and `en_us`), with
//! `config.locales` naming the two; each reader's client shows its own.
//! A literal text (an agent's words) is written as `content` alone.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::markdown::json_escaped_len;
use clawmux_i18n::{I18n, Lang, Text};
use clawmux_message::{Block, Message, Style, Tone};

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

/// Largest request body `message` can have as a card, in bytes: the card's
/// JSON escaped as a string, plus the envelope (a picture counted with a
/// key as long as Feishu's).
pub fn body_len(message: &Message) -> usize {
    card_body_len(&Card::render(message, Some(SIZING_IMAGE_KEY)))
}

fn card_body_len(card: &Card) -> usize {
    json_escaped_len(card.to_json().as_bytes()) + 2 + MAX_ENVELOPE_BYTES
}

/// An image key as long as Feishu's longest seen (`img_v3_…`, about 50
/// bytes), with room: what a picture is measured with before its upload.
const SIZING_IMAGE_KEY: &str = "img_v3_0000_00000000-0000-0000-0000-000000000000_0000000000000000";

/// Header colour, by the names Feishu card JSON 2.0 uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Template {
    Blue,
    Green,
    Orange,
    Red,
    Grey,
    /// The streamed answer's colour while it is typed.
    Wathet,
}

/// `{"tag":"plain_text","content":…,"i18n_content":{…}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlainText {
    tag: Cow<'static, str>,
    /// The English words (a client in a third language shows these).
    pub content: String,
    /// Both languages, when they differ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub i18n_content: Option<I18n>,
}

impl PlainText {
    pub fn new(content: impl Into<Text>) -> Self {
        let text = content.into();
        Self {
            tag: Cow::Borrowed("plain_text"),
            content: text.get(Lang::En).to_string(),
            i18n_content: text.i18n(),
        }
    }

    /// The words a reader in `lang` sees.
    pub fn get(&self, lang: Lang) -> &str {
        localized(&self.content, self.i18n_content.as_ref(), lang)
    }
}

fn localized<'a>(content: &'a str, i18n: Option<&'a I18n>, lang: Lang) -> &'a str {
    i18n.map_or(content, |i| i.get(lang))
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    /// Must be true before and after a PATCH, or the update is refused.
    pub update_multi: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub title: PlainText,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subtitle: Option<PlainText>,
    pub template: Template,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Body {
    pub elements: Vec<Element>,
}

/// Button look (`type` in the JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ButtonKind {
    Default,
    Primary,
}

/// What a click does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Behavior {
    /// Sends `card.action.trigger` with this value to the bot.
    Callback { value: Value },
}

/// One option of a select menu.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SelectOption {
    pub text: PlainText,
    pub value: String,
}

/// A column of a `column_set`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Column {
    tag: Cow<'static, str>,
    width: Cow<'static, str>,
    pub elements: Vec<Element>,
}

/// A body element. Serialized with its `tag`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "tag", rename_all = "snake_case")]
pub enum Element {
    Markdown {
        /// The English words (a client in a third language shows these).
        content: String,
        /// `Some("notation")` renders a small grey note.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text_size: Option<Cow<'static, str>>,
        /// Both languages, when they differ.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        i18n_content: Option<I18n>,
    },
    Hr,
    ColumnSet {
        flex_mode: Cow<'static, str>,
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
        #[serde(default, skip_serializing_if = "Option::is_none")]
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
        scale_type: Cow<'static, str>,
        preview: bool,
    },
}

/// The always-visible header of a [`Element::CollapsiblePanel`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PanelHeader {
    pub title: PlainText,
}

impl Element {
    pub fn markdown(content: impl Into<Text>) -> Self {
        let text = content.into();
        Element::Markdown {
            content: text.get(Lang::En).to_string(),
            text_size: None,
            i18n_content: text.i18n(),
        }
    }

    pub fn note(content: impl Into<Text>) -> Self {
        let text = content.into();
        Element::Markdown {
            content: text.get(Lang::En).to_string(),
            text_size: Some(Cow::Borrowed("notation")),
            i18n_content: text.i18n(),
        }
    }

    /// A button that sends `value` back as a card action.
    pub fn callback_button(label: impl Into<Text>, kind: ButtonKind, value: Value) -> Self {
        Element::Button {
            text: PlainText::new(label),
            kind,
            behaviors: vec![Behavior::Callback { value }],
        }
    }

    /// A closed panel titled `title` holding `elements`.
    pub fn collapsed(title: impl Into<Text>, elements: Vec<Element>) -> Self {
        Element::CollapsiblePanel {
            expanded: false,
            header: PanelHeader {
                title: PlainText::new(title),
            },
            elements,
        }
    }

    /// A picture shown whole, `alt` its text for readers that cannot see it.
    pub fn image(img_key: impl Into<String>, alt: impl Into<Text>) -> Self {
        Element::Img {
            img_key: img_key.into(),
            alt: PlainText::new(alt),
            scale_type: Cow::Borrowed("fit_horizontal"),
            preview: true,
        }
    }

    /// A row of elements (buttons), one auto-width column each, wrapping on
    /// narrow screens.
    pub fn row(items: Vec<Element>) -> Self {
        Element::ColumnSet {
            flex_mode: Cow::Borrowed("flow"),
            columns: items
                .into_iter()
                .map(|e| Column {
                    tag: Cow::Borrowed("column"),
                    width: Cow::Borrowed("auto"),
                    elements: vec![e],
                })
                .collect(),
        }
    }

    /// True when this element or one inside it has text in two languages.
    fn has_i18n(&self) -> bool {
        match self {
            Element::Markdown { i18n_content, .. } => i18n_content.is_some(),
            Element::Hr => false,
            Element::ColumnSet { columns, .. } => columns
                .iter()
                .any(|c| c.elements.iter().any(Element::has_i18n)),
            Element::Button { text, .. } => text.i18n_content.is_some(),
            Element::SelectStatic {
                placeholder,
                options,
                ..
            } => {
                placeholder.i18n_content.is_some()
                    || options.iter().any(|o| o.text.i18n_content.is_some())
            }
            Element::CollapsiblePanel {
                header, elements, ..
            } => header.title.i18n_content.is_some() || elements.iter().any(Element::has_i18n),
            Element::Img { alt, .. } => alt.i18n_content.is_some(),
        }
    }
}

/// A whole card, ready for `serde_json::to_string`. Serialized with
/// `config.locales` when any of its texts is in two languages.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Card {
    schema: Cow<'static, str>,
    pub config: Config,
    pub header: Header,
    pub body: Body,
}

impl Serialize for Card {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct WireConfig {
            update_multi: bool,
            #[serde(skip_serializing_if = "Option::is_none")]
            locales: Option<[&'static str; 2]>,
        }
        #[derive(Serialize)]
        struct Wire<'a> {
            schema: &'a str,
            config: WireConfig,
            header: &'a Header,
            body: &'a Body,
        }
        let locales = self.has_i18n().then(|| Lang::ALL.map(Lang::code));
        Wire {
            schema: &self.schema,
            config: WireConfig {
                update_multi: self.config.update_multi,
                locales,
            },
            header: &self.header,
            body: &self.body,
        }
        .serialize(serializer)
    }
}

impl Card {
    pub fn new(title: impl Into<Text>, template: Template) -> Self {
        Card {
            schema: Cow::Borrowed("2.0"),
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

    pub fn subtitle(mut self, subtitle: impl Into<Text>) -> Self {
        self.header.subtitle = Some(PlainText::new(subtitle));
        self
    }

    pub fn push(mut self, element: Element) -> Self {
        self.body.elements.push(element);
        self
    }

    /// True when any text on the card is in two languages.
    pub fn has_i18n(&self) -> bool {
        let h = &self.header;
        h.title.i18n_content.is_some()
            || h.subtitle
                .as_ref()
                .is_some_and(|s| s.i18n_content.is_some())
            || self.body.elements.iter().any(Element::has_i18n)
    }

    /// The JSON text sent as message `content`.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| String::from("{}"))
    }

    /// Serialized size in bytes (what Feishu's 30 KB limit counts).
    pub fn json_len(&self) -> usize {
        self.to_json().len()
    }

    /// `message` as Feishu draws it. Its picture is the uploaded image
    /// `picture` (a key), or, with none, a note of its alt text.
    pub fn render(message: &Message, picture: Option<&str>) -> Card {
        let mut card = Card::new(&message.title, template_of(message.tone));
        card.header.subtitle = message.subtitle.as_ref().map(PlainText::new);
        card.body.elements = elements(&message.blocks, picture);
        card
    }
}

impl From<&Message> for Card {
    fn from(message: &Message) -> Card {
        Card::render(message, None)
    }
}

/// The header colour a tone is drawn in.
fn template_of(tone: Tone) -> Template {
    match tone {
        Tone::Info => Template::Blue,
        Tone::Done => Template::Green,
        Tone::Asking => Template::Orange,
        Tone::Failed => Template::Red,
        Tone::Closed => Template::Grey,
    }
}

fn elements(blocks: &[Block], picture: Option<&str>) -> Vec<Element> {
    let element = |block: &Block| match block {
        Block::Text(words) => Element::markdown(words),
        Block::Note(words) => Element::note(words),
        Block::Rule => Element::Hr,
        Block::Buttons(buttons) => Element::row(
            (buttons.iter())
                .map(|b| {
                    let kind = match b.style {
                        Style::Plain => ButtonKind::Default,
                        Style::Primary => ButtonKind::Primary,
                    };
                    Element::callback_button(&b.label, kind, b.action.clone())
                })
                .collect(),
        ),
        Block::Menu(menu) => Element::SelectStatic {
            placeholder: PlainText::new(&menu.placeholder),
            options: (menu.options.iter())
                .map(|o| SelectOption {
                    text: PlainText::new(&o.label),
                    value: o.value.clone(),
                })
                .collect(),
            initial_option: menu.initial.clone(),
            behaviors: vec![Behavior::Callback {
                value: menu.action.clone(),
            }],
        },
        Block::Folded { title, blocks } => Element::collapsed(title, elements(blocks, picture)),
        Block::Picture { alt } => match picture {
            Some(key) => Element::image(key, alt),
            None => Element::note(alt),
        },
    };
    blocks.iter().map(element).collect()
}

/// A sent card (its JSON) with every translated text's fallback `content`
/// in `lang`: what a client that shows neither of the card's languages
/// falls back to.
pub fn with_fallback(card: &Value, lang: Lang) -> Value {
    let mut card = card.clone();
    if lang != Lang::En {
        set_fallback(&mut card, lang.code());
    }
    card
}

fn set_fallback(v: &mut Value, code: &str) {
    match v {
        Value::Object(map) => {
            let chosen = (map.get("i18n_content"))
                .and_then(|i| i.get(code))
                .and_then(Value::as_str)
                .map(str::to_string);
            if let Some(text) = chosen
                && map.contains_key("content")
            {
                map.insert("content".into(), Value::String(text));
            }
            for (k, child) in map.iter_mut() {
                if k != "i18n_content" {
                    set_fallback(child, code);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|c| set_fallback(c, code)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn translated_texts_carry_both_languages_and_literal_ones_only_content() {
        let card = Card::new(Text::both("Done", "已完成"), Template::Green)
            .push(Element::markdown("ls -la"))
            .push(Element::note(Text::both("a note", "备注")));
        let v = serde_json::to_value(&card).unwrap();
        assert_eq!(
            v["config"]["locales"],
            serde_json::json!(["zh_cn", "en_us"])
        );
        assert_eq!(
            v["header"]["title"],
            serde_json::json!({"tag": "plain_text", "content": "Done",
                "i18n_content": {"zh_cn": "已完成", "en_us": "Done"}})
        );
        assert_eq!(
            v["body"]["elements"][0],
            serde_json::json!({"tag": "markdown", "content": "ls -la"})
        );
        assert_eq!(v["body"]["elements"][1]["i18n_content"]["zh_cn"], "备注");
        // A card with nothing translated declares no locales.
        let plain = serde_json::to_value(Card::new("ls", Template::Blue)).unwrap();
        assert_eq!(plain["config"], serde_json::json!({"update_multi": true}));
        // The fallback content follows the chat's locale; i18n stays.
        let zh = with_fallback(&v, Lang::Zh);
        assert_eq!(zh["header"]["title"]["content"], "已完成");
        assert_eq!(zh["header"]["title"]["i18n_content"]["en_us"], "Done");
        assert_eq!(zh["body"]["elements"][0]["content"], "ls -la");
        assert_eq!(zh["body"]["elements"][1]["content"], "备注");
        assert_eq!(with_fallback(&v, Lang::En), v);
    }
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
    fn collapsed_panel_shape() {
        let panel = Element::collapsed("Screen", vec![Element::markdown("```\nls\n```")]);
        assert_eq!(
            serde_json::to_value(&panel).unwrap(),
            json!({"tag": "collapsible_panel", "expanded": false,
                "header": {"title": {"tag": "plain_text", "content": "Screen"}},
                "elements": [{"tag": "markdown", "content": "```\nls\n```"}]})
        );
    }

    #[test]
    fn image_shape() {
        let img = Element::image("img_v3_1", "Screen of web");
        assert_eq!(
            serde_json::to_value(&img).unwrap(),
            json!({"tag": "img", "img_key": "img_v3_1",
                "alt": {"tag": "plain_text", "content": "Screen of web"},
                "scale_type": "fit_horizontal", "preview": true})
        );
    }

    /// Each block of a message becomes the element Feishu draws it with; a
    /// picture is its uploaded key, or its alt text as a note before it.
    #[test]
    fn a_message_renders_as_the_card_feishu_draws() {
        use clawmux_message::{Button, Menu, MenuOption};
        let message = Message::new("Approve?", Tone::Asking)
            .subtitle(Text::both("web", "网站"))
            .push(Block::Rule)
            .push(Block::Buttons(vec![
                Button::new("Yes", Style::Primary, json!({"k": 1})),
                Button::new("No", Style::Plain, json!({"k": 2})),
            ]))
            .push(Block::Menu(Menu {
                placeholder: "Pick".into(),
                options: vec![MenuOption {
                    label: "a".into(),
                    value: "va".into(),
                }],
                initial: None,
                action: json!({"k": 3}),
            }))
            .push(Block::folded(
                "Screen",
                vec![Block::Picture { alt: "s".into() }],
            ));
        let v = serde_json::to_value(Card::render(&message, Some("img_1"))).unwrap();
        assert_eq!(v["header"]["template"], "orange");
        assert_eq!(v["header"]["subtitle"]["i18n_content"]["zh_cn"], "网站");
        let els = &v["body"]["elements"];
        assert_eq!(els[0], json!({"tag": "hr"}));
        let yes = &els[1]["columns"][0]["elements"][0];
        assert_eq!(
            (&yes["type"], &yes["behaviors"][0]["value"]["k"]),
            (&json!("primary"), &json!(1))
        );
        assert_eq!(els[1]["columns"][1]["elements"][0]["type"], "default");
        assert_eq!(els[2]["tag"], "select_static");
        assert_eq!(els[2]["options"][0]["value"], "va");
        assert_eq!(els[2]["behaviors"][0]["value"]["k"], 3);
        assert_eq!(els[3]["elements"][0]["img_key"], "img_1");
        let before = serde_json::to_value(Card::from(&message)).unwrap();
        assert_eq!(
            before["body"]["elements"][3]["elements"][0]["text_size"],
            "notation"
        );
    }

    #[test]
    fn body_len_is_the_measured_request() {
        let message = Message::new("q\"\u{1}", Tone::Info).push(Block::text("a\"b\\c\n"));
        let card = Card::from(&message);
        let body = json!({"receive_id": "oc_".repeat(33), "msg_type": "interactive",
            "content": card.to_json(), "uuid": "u".repeat(50)})
        .to_string();
        assert!(
            body.len() <= body_len(&message),
            "{} > {}",
            body.len(),
            body_len(&message)
        );
        // The envelope is the only slack.
        assert!(body_len(&message) - body.len() < MAX_ENVELOPE_BYTES);
    }
}
