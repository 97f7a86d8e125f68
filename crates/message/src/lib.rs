//! A chat message as the bridge means it, before any channel draws it: a
//! title, a tone, and blocks (words, a note, a rule, a row of buttons, a
//! menu, a folded panel, a picture). The presenter builds one, the outbox
//! saves it (this is its saved form, in serde), and each channel renders
//! it: Feishu as card JSON 2.0 (`clawmux_feishu::card`), the console and
//! `clawmux run` as text ([`Message::to_text_in`]). Nothing here knows a
//! channel's wire format or its limits.
//!
//! Words are [`Text`]: both languages, or one literal string (an agent's
//! words). Text blocks are markdown; [`markdown`] has the escaping that
//! shows terminal output and names literally.

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub mod markdown;

use clawmux_i18n::{Lang, Text};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub title: Text,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtitle: Option<Text>,
    pub tone: Tone,
    #[serde(default)]
    pub blocks: Vec<Block>,
}

/// What the message is about, which a channel may show as a colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tone {
    /// Work going on, an answer, a list.
    Info,
    /// Finished well.
    Done,
    /// Waits for the reader: an approval, a question.
    Asking,
    /// Failed or refused.
    Failed,
    /// Over: an approval answered or gone.
    Closed,
}

/// One part of a message's body, in reading order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Block {
    /// Markdown.
    Text(Text),
    /// A small aside (how long it took, what a button does).
    Note(Text),
    /// A dividing line.
    Rule,
    /// Buttons side by side.
    Buttons(Vec<Button>),
    /// Pick one of several.
    Menu(Menu),
    /// Shown as its title until the reader opens it.
    Folded { title: Text, blocks: Vec<Block> },
    /// A picture: the file travels beside the message (the outbox entry
    /// names it) and the channel puts it here; `alt` is what a reader who
    /// cannot see it reads.
    Picture { alt: Text },
}

/// A button; pressing it sends `action` back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Button {
    pub label: Text,
    #[serde(default)]
    pub style: Style,
    pub action: Value,
}

/// How a button stands out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Style {
    #[default]
    Plain,
    /// The suggested choice.
    Primary,
}

/// A menu; choosing an option sends `action` back with the option's value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Menu {
    pub placeholder: Text,
    pub options: Vec<MenuOption>,
    /// The value chosen at first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial: Option<String>,
    pub action: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MenuOption {
    pub label: Text,
    pub value: String,
}

impl Message {
    pub fn new(title: impl Into<Text>, tone: Tone) -> Self {
        Message {
            title: title.into(),
            subtitle: None,
            tone,
            blocks: Vec::new(),
        }
    }

    pub fn subtitle(mut self, subtitle: impl Into<Text>) -> Self {
        self.subtitle = Some(subtitle.into());
        self
    }

    pub fn push(mut self, block: Block) -> Self {
        self.blocks.push(block);
        self
    }

    /// True when any of its words differ between the languages.
    pub fn has_i18n(&self) -> bool {
        let translated = |t: &Text| !t.is_literal();
        translated(&self.title)
            || self.subtitle.as_ref().is_some_and(translated)
            || self.blocks.iter().any(|b| b.any_text(&translated))
    }

    /// What each button and menu sends back, in reading order.
    pub fn actions(&self) -> Vec<&Value> {
        fn walk<'a>(blocks: &'a [Block], out: &mut Vec<&'a Value>) {
            for b in blocks {
                match b {
                    Block::Buttons(buttons) => out.extend(buttons.iter().map(|b| &b.action)),
                    Block::Menu(menu) => out.push(&menu.action),
                    Block::Folded { blocks, .. } => walk(blocks, out),
                    _ => {}
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.blocks, &mut out);
        out
    }

    /// The text blocks' English words, joined by newlines.
    pub fn text(&self) -> String {
        let words = self.blocks.iter().filter_map(|b| match b {
            Block::Text(t) => Some(t.get(Lang::En)),
            _ => None,
        });
        words.collect::<Vec<_>>().join("\n")
    }

    /// Readable plain text: title, subtitle, text, buttons as `[1] Yes`
    /// lines, menus as option lines, a folded panel as its title.
    pub fn to_text(&self) -> String {
        self.render(false, Lang::En)
    }

    /// The same content as markdown (`**title**`, text kept as markdown).
    pub fn to_markdown(&self) -> String {
        self.render(true, Lang::En)
    }

    /// [`Message::to_text`] in `lang`.
    pub fn to_text_in(&self, lang: Lang) -> String {
        self.render(false, lang)
    }

    /// [`Message::to_markdown`] in `lang`.
    pub fn to_markdown_in(&self, lang: Lang) -> String {
        self.render(true, lang)
    }

    fn render(&self, markdown: bool, lang: Lang) -> String {
        let title = self.title.get(lang);
        let mut out = match markdown {
            true => format!("**{title}**\n"),
            false => format!("== {title} ==\n"),
        };
        if let Some(sub) = &self.subtitle {
            out.push_str(sub.get(lang));
            out.push('\n');
        }
        let mut r = Renderer {
            markdown,
            lang,
            button_no: 0,
            out,
        };
        r.blocks(&self.blocks);
        r.out
    }
}

impl Block {
    /// Markdown in both languages (or literal).
    pub fn text(words: impl Into<Text>) -> Self {
        Block::Text(words.into())
    }

    pub fn note(words: impl Into<Text>) -> Self {
        Block::Note(words.into())
    }

    /// A closed panel titled `title` holding `blocks`.
    pub fn folded(title: impl Into<Text>, blocks: Vec<Block>) -> Self {
        Block::Folded {
            title: title.into(),
            blocks,
        }
    }

    fn any_text(&self, f: &impl Fn(&Text) -> bool) -> bool {
        match self {
            Block::Text(t) | Block::Note(t) | Block::Picture { alt: t } => f(t),
            Block::Rule => false,
            Block::Buttons(buttons) => buttons.iter().any(|b| f(&b.label)),
            Block::Menu(menu) => f(&menu.placeholder) || menu.options.iter().any(|o| f(&o.label)),
            Block::Folded { title, blocks } => f(title) || blocks.iter().any(|b| b.any_text(f)),
        }
    }
}

impl Button {
    pub fn new(label: impl Into<Text>, style: Style, action: Value) -> Self {
        Button {
            label: label.into(),
            style,
            action,
        }
    }
}

/// Renders blocks as text, numbering buttons across the whole message.
struct Renderer {
    markdown: bool,
    lang: Lang,
    button_no: usize,
    out: String,
}

impl Renderer {
    fn blocks(&mut self, blocks: &[Block]) {
        let (markdown, lang) = (self.markdown, self.lang);
        for b in blocks {
            match b {
                Block::Text(t) | Block::Note(t) => {
                    let words = t.get(lang);
                    match markdown {
                        true => self.out.push_str(words),
                        false => self.out.push_str(&markdown::unescape_code_text(words)),
                    }
                    self.out.push('\n');
                }
                Block::Rule => self
                    .out
                    .push_str(if markdown { "\n---\n" } else { "----\n" }),
                Block::Buttons(buttons) => {
                    for button in buttons {
                        self.button_no += 1;
                        let line = format!("[{}] {}\n", self.button_no, button.label.get(lang));
                        self.out.push_str(&line);
                    }
                }
                Block::Menu(menu) => {
                    self.out
                        .push_str(&format!("{}:\n", menu.placeholder.get(lang)));
                    for o in &menu.options {
                        let chosen = menu.initial.as_deref() == Some(o.value.as_str());
                        let mark = if chosen { "*" } else { " " };
                        self.out
                            .push_str(&format!(" {mark} {}\n", o.label.get(lang)));
                    }
                }
                // Text cannot be opened: a folded panel stays its title.
                Block::Folded { title, .. } => {
                    let title = title.get(lang);
                    match markdown {
                        true => self.out.push_str(&format!("▸ _{title}_\n")),
                        false => self.out.push_str(&format!("▸ {title}\n")),
                    }
                }
                // Text has no pictures: the alt text stands in.
                Block::Picture { alt } => {
                    let picture = match lang {
                        Lang::En => "picture",
                        Lang::Zh => "图片",
                    };
                    self.out
                        .push_str(&format!("[{picture}: {}]\n", alt.get(lang)));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Message {
        Message::new(Text::both("Approve?", "批准？"), Tone::Asking)
            .subtitle("web")
            .push(Block::text("```\nrm -rf build\n```"))
            .push(Block::Buttons(vec![
                Button::new(Text::both("Yes", "是"), Style::Primary, json!({"k": "1"})),
                Button::new("No", Style::Plain, json!({"k": "2"})),
            ]))
            .push(Block::Menu(Menu {
                placeholder: "Pick".into(),
                options: vec![MenuOption {
                    label: "a".into(),
                    value: "a".into(),
                }],
                initial: Some("a".into()),
                action: json!({"k": "m"}),
            }))
            .push(Block::folded("Screen", vec![Block::text("hidden")]))
            .push(Block::Picture {
                alt: "the screen".into(),
            })
    }

    /// The saved form reads back as it was; a literal text is saved once.
    #[test]
    fn a_message_reads_back_from_its_saved_form() {
        let m = sample();
        let saved = serde_json::to_value(&m).unwrap();
        assert_eq!(saved["title"], json!({"en": "Approve?", "zh": "批准？"}));
        assert_eq!(saved["subtitle"], "web");
        assert_eq!(serde_json::from_value::<Message>(saved).unwrap(), m);
    }

    #[test]
    fn text_numbers_buttons_and_keeps_folded_panels_shut() {
        let text = sample().to_text_in(Lang::Zh);
        assert_eq!(
            text,
            "== 批准？ ==\nweb\n```\nrm -rf build\n```\n[1] 是\n[2] No\nPick:\n * a\n▸ Screen\n[图片: the screen]\n"
        );
        assert!(sample().to_markdown().starts_with("**Approve?**\nweb\n"));
    }

    #[test]
    fn actions_are_listed_in_reading_order_and_languages_are_known() {
        let m = sample();
        let actions: Vec<_> = m.actions().into_iter().map(|v| v["k"].clone()).collect();
        assert_eq!(actions, [json!("1"), json!("2"), json!("m")]);
        assert!(m.has_i18n());
        assert!(
            !Message::new("x", Tone::Info)
                .push(Block::text("y"))
                .has_i18n()
        );
    }
}
