//! An agent's own record of its answer (the final text its turn-end hook
//! or notify program gives: Codex's `last-assistant-message`, Gemini CLI's
//! `AfterAgent` `prompt_response`) read against the settled screen.
//!
//! The record is the answer as the model wrote it, markdown and all; the
//! screen is the answer as drawn (bold as bold, code without its fences)
//! with what the turn did before it (tool calls and their outcome). The
//! result of a turn is the screen's rows before the answer, then the
//! record. What the record is not:
//! - Gemini CLI 0.61.0 says `[no response text]` when the turn gave no
//!   text (an API error fires `AfterAgent` this way ~55 ms after the
//!   prompt, before the error row is drawn): no answer.
//! - Codex 0.171.0 names its session in a side thread whose answer is a
//!   JSON object `{"title": …}`: not the user's turn.
//! - Gemini CLI 0.61.0 builds `prompt_response` from the whole answer and
//!   then its streamed chunks again, joined by spaces (measured: `The shop
//!   sells **pears** and `figs`. shop sel ls  **pears **  and  …`), or
//!   repeats the last chunk (`… pears.ears.`): the settled screen, which
//!   draws the answer once, says where the answer ends.

/// Gemini CLI's `prompt_response` for a turn that gave no text.
pub const GEMINI_NO_TEXT: &str = "[no response text]";

/// The answer a turn-end record carries, None when it carries none (see
/// the module doc): empty, Gemini's placeholder, Codex's title thread.
pub fn answer_of(text: &str) -> Option<String> {
    let t = text.trim();
    if t.is_empty() || t == GEMINI_NO_TEXT || is_title_object(t) {
        return None;
    }
    Some(text.trim_end().to_owned())
}

/// `{"title": "…"}` and nothing else: Codex's thread-title answer.
fn is_title_object(text: &str) -> bool {
    serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(text)
        .is_ok_and(|m| m.len() == 1 && m.get("title").is_some_and(|v| v.is_string()))
}

/// The turn's result: the settled `screen` text (None when the screen
/// showed no answer) with its answer rows replaced by the record `answer`.
/// The rows before the answer (the tool calls the agent showed) stay; the
/// bullet the agent drew before the answer is kept on its first row.
pub fn reconcile(screen: Option<&str>, answer: &str) -> String {
    (screen.and_then(|s| replace_drawn(s, answer))).unwrap_or_else(|| answer.trim_end().to_owned())
}

/// `screen` with the rows that draw `answer` replaced by it (see
/// [`reconcile`]); None when the screen does not draw it.
pub fn replace_drawn(screen: &str, answer: &str) -> Option<String> {
    let answer = answer.trim_end();
    if screen.trim().is_empty() {
        return None;
    }
    let rows: Vec<&str> = screen.lines().collect();
    let whole = alnum(answer);
    // Rows that begin the answer: their letters open the record's.
    let starts: Vec<usize> = (0..rows.len())
        .filter(|&i| {
            let r = alnum(rows[i]);
            !r.is_empty() && whole.starts_with(&r)
        })
        .collect();
    // The first from which the screen and the record agree to the end
    // (one may run on: a closing row, text the record adds), else the
    // first at all.
    let agrees = |i: usize| {
        let shown = alnum(&rows[i..].join("\n"));
        whole.starts_with(&shown) || shown.starts_with(&whole)
    };
    let start = (starts.iter().copied().find(|&i| agrees(i))).or(starts.first().copied())?;
    // Past what the settled screen drew, the record says again what it
    // said already (see the module doc): that was never the answer.
    let answer = match repeat_from(&whole, &alnum(&rows[start..].join("\n"))) {
        Some(k) => cut_after(answer, k),
        None => answer,
    };
    let bullet: String = rows[start]
        .chars()
        .take_while(|c| !c.is_alphanumeric() && !matches!(c, '*' | '_' | '`' | '#' | '['))
        .collect();
    let mut out: Vec<String> = rows[..start].iter().map(|r| r.to_string()).collect();
    out.push(format!("{bullet}{answer}"));
    Some(out.join("\n"))
}

/// Where the letters of a record (`whole`) stop being what the screen
/// (`shown`) drew and only repeat their own end (`…pearsears`,
/// `…figsshopsellspearsandfigs`): the count of letters kept.
fn repeat_from(whole: &str, shown: &str) -> Option<usize> {
    let whole: Vec<char> = whole.chars().collect();
    let k = whole
        .iter()
        .zip(shown.chars())
        .take_while(|(a, b)| **a == *b)
        .count();
    let (said, rest) = whole.split_at(k);
    (!rest.is_empty() && said.ends_with(rest)).then_some(k)
}

/// `text` up to its `n`th letter or digit, with the marks that close it
/// (`**`, `` ` ``, `.`) up to the next white space; all of it when only
/// marks follow (a closing code fence).
fn cut_after(text: &str, n: usize) -> &str {
    let mut seen = 0;
    let mut end = text.len();
    for (at, c) in text.char_indices() {
        if c.is_alphanumeric() {
            if seen == n {
                end = at;
                break;
            }
            seen += 1;
        }
    }
    let rest = &text[end..];
    if !rest.chars().any(char::is_alphanumeric) {
        return text;
    }
    let marks = rest
        .char_indices()
        .find(|(_, c)| c.is_whitespace() || c.is_alphanumeric())
        .map_or(rest.len(), |(at, _)| at);
    text[..end + marks].trim_end()
}

/// `t`'s letters and digits only: how a hook's markdown and the screen's
/// rendering of it (bold drawn as bold, rows wrapped) are compared.
pub fn alnum(t: &str) -> String {
    t.chars().filter(|c| c.is_alphanumeric()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_and_title_threads_are_no_answer() {
        assert_eq!(answer_of(GEMINI_NO_TEXT), None);
        assert_eq!(answer_of("  [no response text]\n"), None);
        assert_eq!(answer_of(""), None);
        assert_eq!(answer_of(r#"{"title": "Shop question"}"#), None);
        assert_eq!(
            answer_of(r#"{"title": "x", "more": 1}"#).as_deref(),
            Some(r#"{"title": "x", "more": 1}"#)
        );
        assert_eq!(answer_of("**Pears.**\n").as_deref(), Some("**Pears.**"));
    }

    #[test]
    fn the_record_replaces_the_drawn_answer_markdown_kept() {
        let screen = "• Ran touch x\n  └ (no output)\n\n• Made the file, **see**\n  x.txt.";
        let answer = "Made the file, **see** `x.txt`.";
        assert_eq!(
            reconcile(Some(screen), answer),
            "• Ran touch x\n  └ (no output)\n\n• Made the file, **see** `x.txt`."
        );
        // Drawn bold, with a closing row under it.
        let screen = "✦ The shop sells pears.\n\n─ Worked for 2s ─";
        assert_eq!(
            reconcile(Some(screen), "The shop sells **pears**."),
            "✦ The shop sells **pears**."
        );
        assert_eq!(reconcile(None, "Hi."), "Hi.");
        assert_eq!(reconcile(Some("• other"), "Hi."), "Hi.");
    }

    #[test]
    fn a_repeated_last_chunk_the_screen_does_not_show_is_dropped() {
        let screen = "✦ The shop sells pears.";
        assert_eq!(
            reconcile(Some(screen), "The shop sells pears.ears."),
            "✦ The shop sells pears."
        );
        let screen = "✦ The shop sells pears and figs.";
        let answer = "The shop sells **pears** and `figs`. shop sel ls  **pears **  and  `figs `.";
        assert_eq!(
            reconcile(Some(screen), answer),
            "✦ The shop sells **pears** and `figs`."
        );
        // Rows the agent drew under the answer change nothing.
        let screen = "✦ The shop sells pears and figs.\n\nℹ Executing Hook: clawmux hook";
        assert_eq!(
            reconcile(Some(screen), answer),
            "✦ The shop sells **pears** and `figs`."
        );
        // A closing code fence is kept.
        let screen = "✦ Run:\n  ls";
        assert_eq!(
            reconcile(Some(screen), "Run:\n```sh\nls\n```"),
            "✦ Run:\n```sh\nls\n```"
        );
        // Drawn twice on screen too: the record is believed.
        let screen = "✦ Say no no.";
        assert_eq!(reconcile(Some(screen), "Say no no."), "✦ Say no no.");
        // Nothing on screen to tell: kept.
        assert_eq!(reconcile(None, "ha ha"), "ha ha");
    }
}
