//! The console channel: chat lines from stdin, cards printed as readable
//! text on stdout. It lets the bridge run with no Feishu credentials, and
//! lets a newcomer drive an agent from a terminal.
//!
//! A card's buttons can be pressed too: each callback button printed gets
//! a console-wide number, shown on its line (`[1] Yes · /press 7`), and
//! `/press 7` (or `/press Yes`) is the click. A bare digit stays a prompt
//! for the agent, as on Feishu.
//!
//! Cards are printed in the terminal's language ([`Lang::from_env`]:
//! `LANG=zh_CN.UTF-8` gives Chinese), read from the card's JSON, which
//! carries both; English is the entry's own text.

use std::collections::VecDeque;
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::bridge::access::policy::ChatKind;
use crate::bridge::channels::chat::{CONSOLE_USER, CardClick, ChatEvent, ChatMessage, ToastLevel};
use crate::bridge::channels::outbox::{Courier, DeliveryError, Failure};
use crate::bridge::texts::Msg;
use crate::i18n::{Lang, Text};
use crate::message::{Block, Button, Message};
use crate::store::state::{ChatTarget, OutboxEntry, OutboxOp};
use crate::text_escape::{Keep, escape_controls};

/// Longest console line taken as a message, in bytes: far above anything
/// typed or pasted by hand (Feishu caps a text message at 150 KB); a longer
/// line is dropped with a note instead of being buffered whole.
pub const MAX_CONSOLE_LINE_BYTES: usize = 256 << 10;

/// Reads chat lines from stdin on a thread of its own until end of input;
/// every non-empty line is a message from the console user. The thread is
/// never joined: a blocking read on a terminal cannot be interrupted, so the
/// process ends without waiting for it. The returned receiver resolves at
/// end of input (Ctrl-D) or a read error.
pub fn spawn_stdin_reader(
    chat: mpsc::Sender<ChatEvent>,
    buttons: ConsoleButtons,
) -> oneshot::Receiver<()> {
    let (done_tx, done_rx) = oneshot::channel();
    let spawned = std::thread::Builder::new()
        .name("console-stdin".into())
        .spawn(move || {
            read_lines(std::io::stdin().lock(), &chat, &buttons);
            let _ = done_tx.send(());
        });
    if let Err(e) = spawned {
        // Without a reader the console cannot take messages: treat as end of input.
        tracing::error!("cannot start the console reader: {e}");
    }
    done_rx
}

/// Reads chat lines until end of input (blocking; run it on its own thread).
pub fn read_lines(
    mut input: impl BufRead,
    chat: &mpsc::Sender<ChatEvent>,
    buttons: &ConsoleButtons,
) {
    let mut n: u64 = 0;
    let started = crate::store::clock::now_ms();
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = match read_bounded_line(&mut input, &mut line) {
            Ok(read) => read,
            Err(e) => {
                tracing::error!("console input: {e}");
                return;
            }
        };
        let too_long = match read {
            Line::End => return,
            Line::Complete => false,
            Line::TooLong => true,
        };
        if too_long {
            eprintln!(
                "clawmux: a console line longer than {MAX_CONSOLE_LINE_BYTES} bytes was dropped"
            );
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        n += 1;
        let id = format!("console-{started}-{n}");
        if let Some(which) = press_arg(text) {
            if !press(buttons, which, id, chat) {
                return;
            }
            continue;
        }
        let message = ChatMessage {
            event_id: id.clone(),
            message_id: id,
            target: ChatTarget::Console,
            kind: ChatKind::Direct,
            sender: CONSOLE_USER.into(),
            text: text.to_string(),
            mentions_bot: true,
            parent_id: None,
            rate_counted: false,
            image_not_saved: None,
        };
        if chat.blocking_send(ChatEvent::Message(message)).is_err() {
            return;
        }
    }
}

/// The button named by a `/press N` or `/press Label` line.
fn press_arg(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("/press")?;
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then(|| rest.trim())
}

/// Presses a button: a click from the console user, answered on stdout.
/// Returns false once the daemon is gone.
fn press(
    buttons: &ConsoleButtons,
    which: &str,
    id: String,
    chat: &mpsc::Sender<ChatEvent>,
) -> bool {
    let value = match buttons.find(which) {
        Ok(value) => value,
        Err(why) => {
            say(&format!("✗ {}", why.get(Lang::from_env())));
            return true;
        }
    };
    let (respond, answer) = oneshot::channel();
    let click = CardClick {
        event_id: id.clone(),
        operator: CONSOLE_USER.into(),
        value,
        option: None,
        message_id: id,
        target: ChatTarget::Console,
        respond: Some(respond),
    };
    if chat.blocking_send(ChatEvent::Click(click)).is_err() {
        return false;
    }
    if let Ok(answer) = answer.blocking_recv()
        && let Some((level, text)) = answer.toast
    {
        let mark = match level {
            ToastLevel::Success => "✓",
            ToastLevel::Info => "·",
            ToastLevel::Warning => "!",
            ToastLevel::Error => "✗",
        };
        say(&format!("{mark} {}", text.get(Lang::from_env())));
    }
    true
}

/// A line of the console's own on stdout, where the cards are.
fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", escape_controls(line, Keep::Nothing)).and_then(|_| out.flush());
}

/// Buttons remembered for `/press`: the newest cards' buttons are the ones
/// a person is looking at; older ones are forgotten past this.
pub const MAX_CONSOLE_BUTTONS: usize = 1024;

/// The console's pressable buttons, shared by the courier that prints them
/// and the reader that takes `/press`.
#[derive(Clone, Default)]
pub struct ConsoleButtons(Arc<Mutex<Buttons>>);

#[derive(Default)]
struct Buttons {
    /// The last number given.
    last: u64,
    /// Oldest first: (number, the card's handle, label, callback value).
    live: VecDeque<(u64, String, String, Value)>,
}

impl ConsoleButtons {
    /// Numbers the buttons of `message` (printed under `handle`): an
    /// updated card's earlier buttons are gone from the screen, so their
    /// numbers no longer press anything. Returns each button's label and
    /// number, in the message's order.
    fn register(&self, handle: &str, message: &Message, lang: Lang) -> Vec<(String, u64)> {
        let Ok(mut b) = self.0.lock() else {
            return Vec::new();
        };
        b.live.retain(|(_, h, _, _)| h != handle);
        let mut shown = Vec::new();
        for button in shown_buttons(message) {
            b.last += 1;
            let (n, label) = (b.last, button.label.get(lang).to_string());
            b.live
                .push_back((n, handle.to_string(), label.clone(), button.action.clone()));
            shown.push((label, n));
        }
        while b.live.len() > MAX_CONSOLE_BUTTONS {
            b.live.pop_front();
        }
        shown
    }

    /// The callback value of the button numbered or labelled `which` (the
    /// newest with that label).
    fn find(&self, which: &str) -> Result<Value, Text> {
        let b = (self.0.lock()).map_err(|_| Msg::ButtonsUnavailable.text())?;
        if which.is_empty() {
            return Err(Msg::SayWhichButton.text());
        }
        let found = match which.parse::<u64>() {
            Ok(n) => b.live.iter().find(|(k, ..)| *k == n),
            Err(_) => b
                .live
                .iter()
                .rev()
                .find(|(_, _, label, _)| label.eq_ignore_ascii_case(which)),
        };
        found
            .map(|(.., value)| value.clone())
            .ok_or_else(|| Msg::NoSuchButton.with(&[("which", which)]))
    }
}

/// The buttons a message's text shows, in the order it numbers them (a
/// folded panel's are not shown).
fn shown_buttons(message: &Message) -> impl Iterator<Item = &Button> {
    (message.blocks.iter())
        .filter_map(|b| match b {
            Block::Buttons(buttons) => Some(buttons),
            _ => None,
        })
        .flatten()
}

/// The card's text with each pressable button's line ending in how to
/// press it (`[1] Yes · /press 7`).
fn with_press_numbers(text: &str, buttons: &[(String, u64)]) -> String {
    let mut out = String::with_capacity(text.len() + 16 * buttons.len());
    for line in text.lines() {
        out.push_str(line);
        let pressable = buttons.iter().enumerate().find_map(|(i, (label, number))| {
            (line == format!("[{}] {label}", i + 1)).then_some(*number)
        });
        if let Some(n) = pressable {
            out.push_str(&format!(" · /press {n}"));
        }
        out.push('\n');
    }
    out
}

enum Line {
    /// A line (its newline removed), or the unterminated last one.
    Complete,
    /// A line past [`MAX_CONSOLE_LINE_BYTES`], skipped to its end.
    TooLong,
    /// End of input.
    End,
}

/// One line into `line`, never holding more than the bound.
fn read_bounded_line(input: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<Line> {
    let mut seen = 0usize;
    loop {
        let chunk = match input.fill_buf() {
            Ok(chunk) => chunk,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(match seen {
                0 => Line::End,
                n if n > MAX_CONSOLE_LINE_BYTES => Line::TooLong,
                _ => Line::Complete,
            });
        }
        let (part, done) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (&chunk[..i], true),
            None => (chunk, false),
        };
        seen += part.len();
        if seen <= MAX_CONSOLE_LINE_BYTES {
            line.extend_from_slice(part);
        } else {
            line.clear();
        }
        let used = part.len() + usize::from(done);
        input.consume(used);
        if done {
            return Ok(if seen > MAX_CONSOLE_LINE_BYTES {
                Line::TooLong
            } else {
                Line::Complete
            });
        }
    }
}

/// A card as printed: its text (agent output, chat text) with control
/// characters made visible, so it cannot drive the operator's terminal.
fn card_text(mark: &str, text: &str) -> String {
    let text = escape_controls(text.trim_end(), Keep::LinesAndTabs);
    format!("{mark}\n{text}\n└─\n")
}

/// Prints cards to stdout, numbering their buttons for `/press`.
#[derive(Default)]
pub struct ConsoleCourier {
    pub buttons: ConsoleButtons,
    /// The language cards are printed in.
    pub lang: Lang,
}

impl ConsoleCourier {
    /// A courier printing in the terminal's language.
    pub fn from_env() -> Self {
        ConsoleCourier {
            lang: Lang::from_env(),
            ..Default::default()
        }
    }
}

impl Courier for ConsoleCourier {
    type Error = DeliveryError;

    fn classify(&self, error: &DeliveryError) -> Failure {
        error.failure()
    }

    async fn deliver(
        &self,
        entry: &OutboxEntry,
        _message_id: Option<&str>,
    ) -> Result<Option<String>, DeliveryError> {
        if let OutboxOp::Send {
            target: ChatTarget::User { .. },
            ..
        } = &entry.op
        {
            // A person's own Feishu chat: the console shows the prompt
            // itself.
            return Err(DeliveryError::NotThisChannel("a person's chat is Feishu's"));
        }
        let (mark, id) = match &entry.op {
            OutboxOp::Send { handle, .. } => ("┌─", Some(handle.to_string())),
            OutboxOp::Patch { .. } => ("├─ (updated)", None),
            OutboxOp::File { handle, .. } => ("┌─ (file)", Some(handle.to_string())),
            OutboxOp::React { .. } => return Ok(None),
        };
        let Some(message) = &entry.message else {
            return Ok(None);
        };
        let shown = (self.buttons).register(entry.op.handle().as_ref(), message, self.lang);
        let text = with_press_numbers(&message.to_text_in(self.lang), &shown);
        let mut out = std::io::stdout().lock();
        let written = out
            .write_all(card_text(mark, &text).as_bytes())
            .and_then(|_| out.flush());
        written.map_err(|e| DeliveryError::Transient(format!("stdout: {e}")))?;
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn card_text_keeps_lines_and_escapes_controls() {
        let shown = card_text("┌─", "Done\x1b]2;pwned\x07\n\tline \x1b[2J\u{9b}1m\rX\n\n");
        assert_eq!(
            shown,
            "┌─\nDone\\x1b]2;pwned\\x07\n\tline \\x1b[2J\\u{9b}1m\\x0dX\n└─\n"
        );
    }

    fn card(buttons: &[(&str, Value)]) -> Message {
        use crate::message::Style;
        let buttons = (buttons.iter())
            .map(|(label, value)| Button::new(*label, Style::Plain, value.clone()))
            .collect();
        let hidden = Button::new("Hidden", Style::Plain, "h".into());
        Message::new("t", crate::message::Tone::Info)
            .push(Block::text("[1] Yes"))
            .push(Block::Buttons(buttons))
            .push(Block::folded("panel", vec![Block::Buttons(vec![hidden])]))
    }

    /// A message prints in the terminal's language, buttons and all; the
    /// agent's words are the same in both.
    #[test]
    fn cards_print_in_the_terminal_language() {
        use crate::bridge::present;
        use crate::bridge::texts::Msg;
        let card = present::with_interrupt(
            present::progress_card("web: /gsd:plan", Msg::Running, None, "● Reading files"),
            &crate::store::ids::project("web"),
            &"j1".parse().unwrap(),
        );
        let zh = card.to_text_in(Lang::Zh);
        assert!(
            zh.starts_with("== web: /gsd:plan ==\n**运行中…**\n"),
            "{zh}"
        );
        assert!(
            zh.contains("● Reading files") && zh.ends_with("[1] 中断\n"),
            "{zh}"
        );
        let buttons = ConsoleButtons::default();
        let shown = buttons.register("c1", &card, Lang::Zh);
        assert_eq!(shown, vec![("中断".to_string(), 1)]);
        assert!(with_press_numbers(&zh, &shown).ends_with("[1] 中断 · /press 1\n"));
        assert!(buttons.find("中断").is_ok());
    }

    #[test]
    fn buttons_get_console_wide_numbers_shown_on_their_lines() {
        let buttons = ConsoleButtons::default();
        let first = buttons.register(
            "c1",
            &card(&[("Yes", "y".into()), ("No", "n".into())]),
            Lang::En,
        );
        assert_eq!(first, [("Yes".to_string(), 1), ("No".to_string(), 2)]);
        let second = buttons.register("c2", &card(&[("Interrupt", "i".into())]), Lang::En);
        assert_eq!(second, [("Interrupt".to_string(), 3)]);
        // Only a button's own line is marked, not agent text that looks like one.
        let text = with_press_numbers("Agent said:\n[1] Yes\n[1] Yes\n[2] No\n", &first);
        assert_eq!(
            text,
            "Agent said:\n[1] Yes · /press 1\n[1] Yes · /press 1\n[2] No · /press 2\n"
        );
        assert_eq!(buttons.find("2"), Ok(Value::from("n")));
        assert_eq!(buttons.find("interrupt"), Ok(Value::from("i")));
        // The card updated: its old buttons press nothing.
        buttons.register("c1", &card(&[]), Lang::En);
        let none = buttons.find("1").unwrap_err();
        assert!(none.get(Lang::En).contains("no button `1`"), "{none:?}");
        assert!(none.get(Lang::Zh).contains("没有按钮 `1`"), "{none:?}");
        let empty = buttons.find("").unwrap_err();
        assert!(empty.get(Lang::En).contains("/press N"), "{empty:?}");
        assert!(
            empty.get(Lang::Zh).starts_with("请说明按哪个按钮"),
            "{empty:?}"
        );
        assert_eq!(press_arg("/press 3"), Some("3"));
        assert_eq!(press_arg("/pressure"), None);
        assert_eq!(press_arg("3"), None);
    }

    #[test]
    fn lines_become_messages_and_overlong_ones_are_dropped() {
        let long = "y".repeat(MAX_CONSOLE_LINE_BYTES + 1);
        let input = format!("/gsd:help\n\n  {long}\n  status?  \nlast");
        let (tx, mut rx) = mpsc::channel(8);
        read_lines(std::io::Cursor::new(input), &tx, &ConsoleButtons::default());
        drop(tx);
        let mut texts = Vec::new();
        while let Ok(ChatEvent::Message(m)) = rx.try_recv() {
            texts.push(m.text);
        }
        assert_eq!(texts, ["/gsd:help", "status?", "last"]);
    }
}
