//! The streamed answer card: a card JSON 2.0 with one markdown element
//! (`element_id` [`ANSWER_ELEMENT_ID`]) that CardKit types the running
//! turn's answer into, and the same card as plain text for the console.

use serde_json::{Value, json};

use crate::bridge::texts::Msg;
use crate::feishu::markdown::first_body_bytes;
use crate::i18n::{Lang, Text};

/// The element the answer streams into.
pub const ANSWER_ELEMENT_ID: &str = "answer";
/// Shown before any text (CardKit refuses empty content).
pub const PLACEHOLDER: &str = "…";
/// Longest chat-list preview of the card, in bytes.
const SUMMARY_BYTES: usize = 120;

/// The title of the answer card of command `title`.
pub fn stream_title(title: &str) -> Text {
    let title = first_body_bytes(title, super::MAX_TITLE_BODY_BYTES);
    Msg::AnswerOf.with(&[("title", title)])
}

/// What the element shows for `text`: CardKit takes 1 char at least.
pub fn shown_text(text: &str) -> &str {
    if text.trim().is_empty() {
        PLACEHOLDER
    } else {
        text
    }
}

/// The chat-list preview of a card showing `text`: its last line.
pub fn summary(text: &str) -> String {
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or(PLACEHOLDER);
    first_body_bytes(last.trim(), SUMMARY_BYTES).to_string()
}

/// The answer card. `streaming`: a CardKit entity still being typed into
/// (wathet); otherwise the final or patched card (green once `done`).
pub fn stream_card(title: &str, text: &str, streaming: bool, done: bool) -> Value {
    let template = if done { "green" } else { "wathet" };
    let title = stream_title(title);
    // The title is the card's only translated text: the answer is the agent's.
    let locales = Lang::ALL.map(Lang::code);
    let mut config = json!({"update_multi": true, "locales": locales,
        "summary": {"content": summary(text)}});
    if streaming {
        config["streaming_mode"] = Value::Bool(true);
    }
    json!({
        "schema": "2.0",
        "config": config,
        "header": {"title": {"tag": "plain_text", "content": title.get(Lang::En),
            "i18n_content": title.i18n()}, "template": template},
        "body": {"elements": [
            {"tag": "markdown", "element_id": ANSWER_ELEMENT_ID, "content": shown_text(text)}
        ]}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_card_has_one_answer_element_and_never_empty_text() {
        let card = stream_card("/gsd:progress", "", true, false);
        assert_eq!(card["config"]["streaming_mode"], true);
        assert_eq!(card["config"]["update_multi"], true);
        let el = &card["body"]["elements"][0];
        assert_eq!(el["element_id"], ANSWER_ELEMENT_ID);
        assert_eq!(el["content"], PLACEHOLDER);
        let done = stream_card("t", "a\nlast line\n", false, true);
        assert!(done["config"].get("streaming_mode").is_none());
        assert_eq!(done["config"]["summary"]["content"], "last line");
        assert_eq!(done["header"]["template"], "green");
        assert_eq!(done["header"]["title"]["content"], "Answer: t");
        assert_eq!(done["header"]["title"]["i18n_content"]["zh_cn"], "回答：t");
        assert_eq!(done["config"]["locales"], json!(["zh_cn", "en_us"]));
    }
}
