//! The outbox's saved form before messages: releases before this one saved
//! each entry as the Feishu card JSON 2.0 it would send, with the card's
//! plain text beside it. This reads such a card back into a [`Message`] on
//! load, so an upgrade delivers what was queued. Only the shapes those
//! releases wrote are read; a card this cannot read becomes its saved text.

use clawmux_i18n::Text;
use clawmux_message::{Block, Button, Menu, MenuOption, Message, Style, Tone};
use serde_json::Value;

/// The message a saved card says; `text` (its plain rendering, `== title
/// ==` then the body) stands in when the card has no readable title.
pub(crate) fn message_of(card: &Value, text: &str) -> Message {
    let header = &card["header"];
    let Some(title) = words(&header["title"]) else {
        return from_text(text);
    };
    let tone = match header["template"].as_str() {
        Some("green") => Tone::Done,
        Some("orange") => Tone::Asking,
        Some("red") => Tone::Failed,
        Some("grey") => Tone::Closed,
        _ => Tone::Info,
    };
    Message {
        title,
        subtitle: words(&header["subtitle"]),
        tone,
        blocks: blocks(&card["body"]["elements"]),
    }
}

/// A text object (`content`, and `i18n_content` when translated).
fn words(v: &Value) -> Option<Text> {
    let content = v["content"].as_str()?;
    let i18n = &v["i18n_content"];
    Some(match (i18n["en_us"].as_str(), i18n["zh_cn"].as_str()) {
        (Some(en), Some(zh)) => Text::both(en, zh),
        _ => Text::literal(content),
    })
}

fn blocks(elements: &Value) -> Vec<Block> {
    let mut out = Vec::new();
    for e in elements.as_array().into_iter().flatten() {
        let block = match e["tag"].as_str() {
            Some("markdown") => match (words(e), e["text_size"].as_str()) {
                (Some(t), Some("notation")) => Some(Block::Note(t)),
                (t, _) => t.map(Block::Text),
            },
            Some("hr") => Some(Block::Rule),
            Some("column_set") => {
                let columns = e["columns"].as_array().into_iter().flatten();
                let inner = columns.flat_map(|c| c["elements"].as_array().into_iter().flatten());
                let buttons: Vec<Button> = inner.filter_map(button).collect();
                (!buttons.is_empty()).then_some(Block::Buttons(buttons))
            }
            Some("button") => button(e).map(|b| Block::Buttons(vec![b])),
            Some("select_static") => menu(e).map(Block::Menu),
            Some("collapsible_panel") => words(&e["header"]["title"]).map(|title| Block::Folded {
                title,
                blocks: blocks(&e["elements"]),
            }),
            Some("img") => words(&e["alt"]).map(|alt| Block::Picture { alt }),
            _ => None,
        };
        out.extend(block);
    }
    out
}

/// The callback a button or menu sends.
fn callback(e: &Value) -> Option<Value> {
    let behaviors = e["behaviors"].as_array()?;
    let found = behaviors.iter().find(|b| b["type"] == "callback");
    found.map(|b| b["value"].clone())
}

fn button(e: &Value) -> Option<Button> {
    let style = match e["type"].as_str() {
        Some("primary") => Style::Primary,
        _ => Style::Plain,
    };
    Some(Button::new(words(&e["text"])?, style, callback(e)?))
}

fn menu(e: &Value) -> Option<Menu> {
    let options = (e["options"].as_array()?.iter())
        .filter_map(|o| {
            Some(MenuOption {
                label: words(&o["text"])?,
                value: o["value"].as_str()?.to_string(),
            })
        })
        .collect();
    Some(Menu {
        placeholder: words(&e["placeholder"])?,
        options,
        initial: e["initial_option"].as_str().map(str::to_string),
        action: callback(e)?,
    })
}

/// A message made of a card's plain text: its `== title ==` line, then the
/// rest as one text block.
fn from_text(text: &str) -> Message {
    let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
    let title = (first.strip_prefix("== ")).and_then(|t| t.strip_suffix(" =="));
    let (title, body) = match title {
        Some(title) => (title, rest),
        None => ("clawmux", text),
    };
    Message::new(title, Tone::Info).push(Block::text(body.trim_end()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A progress card as the last release saved it reads back whole:
    /// title in both languages, tone, text, note, buttons and panel.
    #[test]
    fn a_card_saved_by_the_last_release_reads_as_its_message() {
        let card = json!({"schema": "2.0", "config": {"update_multi": true},
            "header": {"title": {"tag": "plain_text", "content": "web: /gsd:plan"},
                "subtitle": {"tag": "plain_text", "content": "Running…",
                    "i18n_content": {"zh_cn": "运行中…", "en_us": "Running…"}},
                "template": "orange"},
            "body": {"elements": [
                {"tag": "markdown", "content": "● Reading files"},
                {"tag": "markdown", "content": "12 s", "text_size": "notation"},
                {"tag": "hr"},
                {"tag": "column_set", "flex_mode": "flow", "columns": [
                    {"tag": "column", "width": "auto", "elements": [
                        {"tag": "button", "type": "primary",
                         "text": {"tag": "plain_text", "content": "Yes"},
                         "behaviors": [{"type": "callback", "value": {"a": 1}}]}]}]},
                {"tag": "select_static",
                 "placeholder": {"tag": "plain_text", "content": "Pick"},
                 "options": [{"text": {"tag": "plain_text", "content": "x"}, "value": "vx"}],
                 "behaviors": [{"type": "callback", "value": {"m": 1}}]},
                {"tag": "collapsible_panel", "expanded": false,
                 "header": {"title": {"tag": "plain_text", "content": "Screen"}},
                 "elements": [{"tag": "markdown", "content": "```\nls\n```"}]},
                {"tag": "img", "img_key": "clawmux:pending-image",
                 "alt": {"tag": "plain_text", "content": "screen"}}]}});
        let m = message_of(&card, "");
        assert_eq!(m.title, Text::literal("web: /gsd:plan"));
        assert_eq!(m.subtitle, Some(Text::both("Running…", "运行中…")));
        assert_eq!(m.tone, Tone::Asking);
        assert_eq!(
            m.blocks,
            vec![
                Block::text("● Reading files"),
                Block::note("12 s"),
                Block::Rule,
                Block::Buttons(vec![Button::new("Yes", Style::Primary, json!({"a": 1}))]),
                Block::Menu(Menu {
                    placeholder: "Pick".into(),
                    options: vec![MenuOption {
                        label: "x".into(),
                        value: "vx".into()
                    }],
                    initial: None,
                    action: json!({"m": 1}),
                }),
                Block::folded("Screen", vec![Block::text("```\nls\n```")]),
                Block::Picture {
                    alt: "screen".into()
                },
            ]
        );
    }

    #[test]
    fn a_card_of_another_shape_keeps_its_saved_text() {
        let m = message_of(&json!({"type": "card"}), "== Done ==\nall\nwell\n");
        assert_eq!(m.title, Text::literal("Done"));
        assert_eq!(m.blocks, vec![Block::text("all\nwell")]);
        let m = message_of(&json!(null), "just words");
        assert_eq!(m.blocks, vec![Block::text("just words")]);
    }
}
