//! Typed intake events parsed from Feishu's event JSON (`im.message.receive_v1`,
//! `card.action.trigger` in both the 2.0 envelope and the older card-callback
//! shape), the answer a card action gets, and the dedupe contract.

use clawmux_i18n::{Lang, Text};
use std::collections::{HashSet, VecDeque};
use std::sync::Mutex;

use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::card::Card;

/// One event for the bridge.
#[derive(Debug)]
pub enum IntakeEvent {
    MessageReceived(Message),
    CardAction(ActionEvent),
    /// A correctly signed event was refused because its timestamp is
    /// `skew_secs` from this host's clock (positive: Feishu is ahead),
    /// outside ±`window_secs`: the host clock is most likely off, and
    /// every event will be refused until it is fixed.
    ClockSkew {
        skew_secs: i64,
        window_secs: u64,
    },
}

/// A chat message sent to the bot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub event_id: String,
    pub message_id: String,
    pub chat_id: String,
    /// `p2p`, `group` or `topic_group`.
    pub chat_type: String,
    pub sender_open_id: String,
    /// `text`, `post`, … (text is extracted from text and post messages).
    pub message_type: String,
    /// The text with `@` mentions removed and whitespace trimmed.
    pub text: String,
    /// The message @-mentions someone (in a group, only messages that
    /// mention the bot reach it unless the app may read all messages).
    /// Whether the bot is among them is [`Message::mentions`]' job.
    pub mentions_bot: bool,
    /// Who was @-mentioned.
    pub mentions: Vec<Mention>,
    /// The `image_key` of an image message (`message_type: image`).
    pub image_key: Option<String>,
    /// Set when the message replies to another (e.g. one of our cards).
    pub parent_id: Option<String>,
    /// Milliseconds since the epoch, as Feishu sent it.
    pub create_time: String,
}

/// One @-mention in a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mention {
    /// `mentions[].id.open_id` (empty if Feishu sent none).
    pub open_id: String,
    /// `mentioned_type` (`user`, `bot`, …) when Feishu sends it.
    pub mentioned_type: Option<String>,
}

impl Message {
    /// Whether the bot was @-mentioned: its open_id among the mentions.
    /// Without its open_id (bot info not answered yet), a mention typed
    /// `bot` counts, and an untyped one does not.
    pub fn mentions(&self, bot_open_id: Option<&str>) -> bool {
        self.mentions.iter().any(|m| match bot_open_id {
            Some(bot) => m.open_id == bot,
            None => m.mentioned_type.as_deref() == Some("bot"),
        })
    }
}

/// A click on a card button or a choice in a card menu.
#[derive(Debug)]
pub struct ActionEvent {
    pub event_id: String,
    pub operator_open_id: String,
    /// The `value` of the button's callback behaviour.
    pub value: Value,
    /// The chosen option of a select menu.
    pub option: Option<String>,
    pub message_id: String,
    pub chat_id: String,
    /// Answer within ~2.5 s; after that the intake answers `{}` itself.
    pub respond: oneshot::Sender<CardResponse>,
}

/// What a card action is answered with: a toast, a replacement card, or both.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CardResponse {
    pub toast: Option<Toast>,
    pub card: Option<Card>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Toast {
    pub kind: ToastKind,
    /// English as `content`, both languages as `i18n` when they differ.
    pub text: Text,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToastKind {
    Success,
    Info,
    Warning,
    Error,
}

impl CardResponse {
    pub fn toast(kind: ToastKind, text: impl Into<Text>) -> Self {
        CardResponse {
            toast: Some(Toast {
                kind,
                text: text.into(),
            }),
            card: None,
        }
    }

    pub fn with_card(mut self, card: Card) -> Self {
        self.card = Some(card);
        self
    }

    /// The callback answer: `{}`, `{"toast":…}` and/or `{"card":{"type":"raw","data":…}}`.
    pub fn to_json(&self) -> Value {
        let mut out = serde_json::Map::new();
        if let Some(t) = &self.toast {
            let mut toast = json!({"type": t.kind, "content": t.text.get(Lang::En)});
            if let Some(i18n) = t.text.i18n() {
                toast["i18n"] = json!(i18n);
            }
            out.insert("toast".into(), toast);
        }
        if let Some(c) = &self.card {
            let data = serde_json::to_value(c).unwrap_or(Value::Null);
            out.insert("card".into(), json!({"type": "raw", "data": data}));
        }
        Value::Object(out)
    }
}

/// Remembers which events were handled. The daemon implements it over its
/// persisted state so redeliveries after a restart are still recognised.
pub trait Dedupe: Send + Sync {
    /// True the first time `key` is seen (and remembers it), false after.
    fn first_seen(&self, key: &str) -> bool;
}

/// Bounded in-memory [`Dedupe`] (tests, console mode).
pub struct MemoryDedupe {
    inner: Mutex<(HashSet<String>, VecDeque<String>)>,
    capacity: usize,
}

/// Keys an in-memory dedupe keeps: Feishu redelivers within hours, a busy
/// bot sees far fewer events than this in that time.
pub const MEMORY_DEDUPE_CAPACITY: usize = 100_000;

impl Default for MemoryDedupe {
    fn default() -> Self {
        Self::with_capacity(MEMORY_DEDUPE_CAPACITY)
    }
}

impl MemoryDedupe {
    pub fn with_capacity(capacity: usize) -> Self {
        MemoryDedupe {
            inner: Mutex::new((HashSet::new(), VecDeque::new())),
            capacity: capacity.max(1),
        }
    }
}

impl Dedupe for MemoryDedupe {
    fn first_seen(&self, key: &str) -> bool {
        let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let (set, order) = &mut *guard;
        if set.contains(key) {
            return false;
        }
        if order.len() >= self.capacity
            && let Some(old) = order.pop_front()
        {
            set.remove(&old);
        }
        set.insert(key.to_string());
        order.push_back(key.to_string());
        true
    }
}

/// What a payload turned out to be (public for the fuzz target only).
#[doc(hidden)]
#[derive(Debug)]
pub enum Parsed {
    Message(Message),
    /// A card action minus its answer channel.
    CardAction {
        event_id: String,
        operator_open_id: String,
        value: Value,
        option: Option<String>,
        message_id: String,
        chat_id: String,
    },
    /// Another event type: acknowledged and dropped.
    Other(String),
}

/// Why a payload could not be understood.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EventError {
    #[error("payload is not JSON: {0}")]
    NotJson(String),
    #[error("event is missing {0}")]
    Missing(&'static str),
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    path.iter().try_fold(v, |v, k| v.get(k))?.as_str()
}

fn need(v: &Value, path: &[&str], what: &'static str) -> Result<String, EventError> {
    str_at(v, path)
        .map(str::to_string)
        .ok_or(EventError::Missing(what))
}

/// The verification token a payload carries (2.0 `header.token` or top-level `token`).
pub(crate) fn token_of(v: &Value) -> Option<&str> {
    str_at(v, &["header", "token"]).or_else(|| str_at(v, &["token"]))
}

/// Parse an event payload. `fallback_id` names an old-style card callback,
/// which carries no event id (the frame's message id is used). Public for
/// the fuzz target only.
#[doc(hidden)]
pub fn parse(payload: &Value, fallback_id: &str) -> Result<Parsed, EventError> {
    let event_type = str_at(payload, &["header", "event_type"]);
    match event_type {
        Some("im.message.receive_v1") => parse_message(payload).map(Parsed::Message),
        Some("card.action.trigger") => parse_card_action_v2(payload),
        Some(other) => Ok(Parsed::Other(other.to_string())),
        // The older card callback: no header, `open_message_id` at the top.
        None if payload.get("action").is_some() && payload.get("open_message_id").is_some() => {
            parse_card_action_v1(payload, fallback_id)
        }
        None => Ok(Parsed::Other(
            str_at(payload, &["type"]).unwrap_or("unknown").to_string(),
        )),
    }
}

fn parse_message(p: &Value) -> Result<Message, EventError> {
    let e = p.get("event").ok_or(EventError::Missing("event"))?;
    let m = e
        .get("message")
        .ok_or(EventError::Missing("event.message"))?;
    let message_type = str_at(m, &["message_type"]).unwrap_or("text").to_string();
    let content: Value = str_at(m, &["content"])
        .and_then(|c| serde_json::from_str(c).ok())
        .unwrap_or(Value::Null);
    let raw_text = match message_type.as_str() {
        "text" => str_at(&content, &["text"]).unwrap_or_default().to_string(),
        "post" => post_text(&content),
        _ => String::new(),
    };
    let mentions = m
        .get("mentions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut text = raw_text;
    for mention in &mentions {
        if let Some(key) = str_at(mention, &["key"]) {
            text = text.replace(key, "");
        }
    }
    let image_key = (message_type == "image")
        .then(|| str_at(&content, &["image_key"]).map(str::to_string))
        .flatten();
    Ok(Message {
        image_key,
        event_id: need(p, &["header", "event_id"], "header.event_id")?,
        message_id: need(m, &["message_id"], "event.message.message_id")?,
        chat_id: need(m, &["chat_id"], "event.message.chat_id")?,
        chat_type: str_at(m, &["chat_type"]).unwrap_or("p2p").to_string(),
        sender_open_id: need(
            e,
            &["sender", "sender_id", "open_id"],
            "event.sender.sender_id.open_id",
        )?,
        message_type,
        text: tidy(&text),
        mentions_bot: !mentions.is_empty(),
        mentions: mentions
            .iter()
            .map(|m| Mention {
                open_id: str_at(m, &["id", "open_id"])
                    .unwrap_or_default()
                    .to_string(),
                mentioned_type: str_at(m, &["mentioned_type"]).map(str::to_string),
            })
            .collect(),
        parent_id: str_at(m, &["parent_id"])
            .filter(|s| !s.is_empty())
            .map(str::to_string),
        create_time: str_at(m, &["create_time"]).unwrap_or_default().to_string(),
    })
}

/// A message's text as its sender wrote it, lines and indentation kept (code
/// pasted from a phone must reach the agent as code): line ends unified,
/// trailing blanks and blank lines at either end dropped, and the blanks a
/// removed mention leaves at the start of the first line.
fn tidy(text: &str) -> String {
    let lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l).trim_end())
        .collect();
    let first = lines.iter().position(|l| !l.is_empty());
    let last = lines.iter().rposition(|l| !l.is_empty());
    let (Some(first), Some(last)) = (first, last) else {
        return String::new();
    };
    let mut out = lines[first].trim_start().to_owned();
    for line in &lines[first + 1..=last] {
        out.push('\n');
        out.push_str(line);
    }
    out
}

/// Plain text of a rich-text (`post`) message: its text and link runs.
fn post_text(content: &Value) -> String {
    // Either {"title","content"} or keyed by locale {"zh_cn":{…}}.
    let body = if content.get("content").is_some() {
        content
    } else {
        content
            .as_object()
            .and_then(|o| o.values().next())
            .unwrap_or(&Value::Null)
    };
    let mut out = Vec::new();
    for para in body
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let line: String = para
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|run| str_at(run, &["text"]))
            .collect();
        out.push(line);
    }
    out.join("\n")
}

fn parse_card_action_v2(p: &Value) -> Result<Parsed, EventError> {
    let e = p.get("event").ok_or(EventError::Missing("event"))?;
    Ok(Parsed::CardAction {
        event_id: need(p, &["header", "event_id"], "header.event_id")?,
        operator_open_id: need(e, &["operator", "open_id"], "event.operator.open_id")?,
        value: e
            .get("action")
            .and_then(|a| a.get("value"))
            .cloned()
            .unwrap_or(Value::Null),
        option: str_at(e, &["action", "option"]).map(str::to_string),
        message_id: need(
            e,
            &["context", "open_message_id"],
            "event.context.open_message_id",
        )?,
        chat_id: str_at(e, &["context", "open_chat_id"])
            .unwrap_or_default()
            .to_string(),
    })
}

fn parse_card_action_v1(p: &Value, fallback_id: &str) -> Result<Parsed, EventError> {
    Ok(Parsed::CardAction {
        event_id: format!("card:{fallback_id}"),
        operator_open_id: need(p, &["open_id"], "open_id")?,
        value: p
            .get("action")
            .and_then(|a| a.get("value"))
            .cloned()
            .unwrap_or(Value::Null),
        option: str_at(p, &["action", "option"]).map(str::to_string),
        message_id: need(p, &["open_message_id"], "open_message_id")?,
        chat_id: str_at(p, &["open_chat_id"]).unwrap_or_default().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_mentions_stripped() {
        let p = json!({
            "schema": "2.0",
            "header": {"event_id": "ev1", "event_type": "im.message.receive_v1", "token": "tok"},
            "event": {
                "sender": {"sender_id": {"open_id": "ou_1"}},
                "message": {
                    "message_id": "om_1", "chat_id": "oc_1", "chat_type": "group", "message_type": "text",
                    "content": "{\"text\":\"@_user_1  /gsd:progress  now\"}",
                    "mentions": [{"key": "@_user_1", "id": {"open_id": "ou_bot"}, "name": "bot"}],
                    "parent_id": "om_0", "create_time": "1700000000000"
                }
            }
        });
        let Parsed::Message(m) = parse(&p, "x").unwrap() else {
            panic!("not a message")
        };
        // The mention and the blanks it leaves go; the sender's own spacing stays.
        assert_eq!(m.text, "/gsd:progress  now");
        assert!(m.mentions_bot);
        assert!(m.mentions(Some("ou_bot")));
        assert!(!m.mentions(Some("ou_other_bot")), "a colleague's mention");
        assert!(!m.mentions(None), "untyped, and the bot's id unknown");
        assert_eq!(m.parent_id.as_deref(), Some("om_0"));
        assert_eq!(
            (m.event_id.as_str(), m.chat_type.as_str()),
            ("ev1", "group")
        );
        assert_eq!(token_of(&p), Some("tok"));
    }

    #[test]
    fn text_keeps_its_lines_and_indentation() {
        assert_eq!(tidy("  a:\r\n    b  \n\n  c\n\n"), "a:\n    b\n\n  c");
        assert_eq!(tidy(" \n \t\n"), "");
    }

    /// An image message as Feishu sends it: `content` holds only the
    /// image's key, and there is no `mentions`.
    fn image_message(chat_type: &str) -> Value {
        json!({
            "schema": "2.0",
            "header": {"event_id": "ev_img", "event_type": "im.message.receive_v1", "token": "tok"},
            "event": {
                "sender": {"sender_id": {"open_id": "ou_1"}},
                "message": {
                    "message_id": "om_img", "chat_id": "oc_1", "chat_type": chat_type,
                    "message_type": "image", "content": "{\"image_key\":\"img_v3_1\"}",
                    "create_time": "1700000000000"
                }
            }
        })
    }

    #[test]
    fn an_image_message_has_its_key_and_no_mention() {
        let Parsed::Message(img) = parse(&image_message("group"), "x").unwrap() else {
            panic!("not a message")
        };
        assert_eq!(img.image_key.as_deref(), Some("img_v3_1"));
        assert_eq!(img.text, "");
        assert!(img.mentions.is_empty() && !img.mentions_bot);
        // An image message carries no mention: where one is required (the
        // access policy's `require_mention`), it is not for the bot.
        assert!(!img.mentions(Some("ou_bot")));
        let Parsed::Message(topic) = parse(&image_message("topic_group"), "x").unwrap() else {
            panic!("not a message")
        };
        assert_eq!(topic.chat_type, "topic_group");
    }

    #[test]
    fn text_in_a_group_is_addressed_only_with_the_bot_mentioned() {
        let text = |mentions: Value| {
            json!({
                "header": {"event_id": "e", "event_type": "im.message.receive_v1"},
                "event": {"sender": {"sender_id": {"open_id": "ou"}},
                          "message": {"message_id": "m", "chat_id": "c", "chat_type": "group",
                                      "message_type": "text", "content": "{\"text\":\"@_user_1 hi\"}",
                                      "mentions": mentions}}
            })
        };
        let bot = json!([{"key": "@_user_1", "id": {"open_id": "ou_bot"}}]);
        let colleague = json!([{"key": "@_user_1", "id": {"open_id": "ou_colleague"}}]);
        for (mentions, addressed) in [(bot, true), (colleague, false), (json!([]), false)] {
            let Parsed::Message(m) = parse(&text(mentions.clone()), "x").unwrap() else {
                panic!("not a message")
            };
            assert_eq!(m.mentions(Some("ou_bot")), addressed, "{mentions}");
        }
    }

    #[test]
    fn post_message_text() {
        let content = json!({"zh_cn": {"title": "", "content": [[{"tag": "text", "text": "/gsd:"}, {"tag": "text", "text": "help"}]]}});
        let p = json!({
            "header": {"event_id": "e", "event_type": "im.message.receive_v1"},
            "event": {"sender": {"sender_id": {"open_id": "ou"}},
                      "message": {"message_id": "m", "chat_id": "c", "message_type": "post", "content": content.to_string()}}
        });
        let Parsed::Message(m) = parse(&p, "x").unwrap() else {
            panic!()
        };
        assert_eq!(m.text, "/gsd:help");
    }

    #[test]
    fn card_actions_both_shapes() {
        let v2 = json!({
            "schema": "2.0",
            "header": {"event_id": "ev2", "event_type": "card.action.trigger"},
            "event": {"operator": {"open_id": "ou_1"}, "action": {"value": {"k": 1}, "option": "web"},
                      "context": {"open_message_id": "om_1", "open_chat_id": "oc_1"}}
        });
        match parse(&v2, "x").unwrap() {
            Parsed::CardAction {
                event_id,
                value,
                option,
                message_id,
                ..
            } => {
                assert_eq!((event_id.as_str(), message_id.as_str()), ("ev2", "om_1"));
                assert_eq!(value, json!({"k": 1}));
                assert_eq!(option.as_deref(), Some("web"));
            }
            other => panic!("{other:?}"),
        }
        let v1 = json!({"open_id": "ou_1", "open_message_id": "om_2", "action": {"value": {"k": 2}, "tag": "button"}});
        match parse(&v1, "frame9").unwrap() {
            Parsed::CardAction {
                event_id, value, ..
            } => {
                assert_eq!(event_id, "card:frame9");
                assert_eq!(value, json!({"k": 2}));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn missing_fields_are_errors_not_panics() {
        let p =
            json!({"header": {"event_type": "im.message.receive_v1"}, "event": {"message": {}}});
        assert!(parse(&p, "x").is_err());
        assert!(matches!(
            parse(&json!({"header": {"event_type": "x.y"}}), "x"),
            Ok(Parsed::Other(_))
        ));
        assert!(matches!(parse(&json!(42), "x"), Ok(Parsed::Other(_))));
    }

    #[test]
    fn response_json() {
        assert_eq!(CardResponse::default().to_json(), json!({}));
        let r = CardResponse::toast(ToastKind::Success, "ok")
            .with_card(Card::new("t", crate::card::Template::Grey));
        let v = r.to_json();
        assert_eq!(v["toast"], json!({"type": "success", "content": "ok"}));
        assert_eq!(v["card"]["type"], "raw");
        assert_eq!(v["card"]["data"]["schema"], "2.0");
    }

    #[test]
    fn memory_dedupe_bounded() {
        let d = MemoryDedupe::with_capacity(2);
        assert!(d.first_seen("a"));
        assert!(!d.first_seen("a"));
        assert!(d.first_seen("b"));
        assert!(d.first_seen("c"));
        assert!(d.first_seen("a"), "oldest key evicted");
    }
}
