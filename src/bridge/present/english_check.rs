//! For tests: the texts of a card a Chinese reader would see in English,
//! i.e. clawmux's own words left untranslated. What a Chinese client
//! shows (a text's `i18n_content.zh_cn`, else its `content`) may hold
//! English only as code, chat commands, or what the caller lists as
//! `literal` (an agent's words, names).

use serde_json::Value;

/// Every text a Chinese client shows that, after removing code (fenced
/// and inline), chat commands and the caller's `literal` strings, still
/// holds an English word.
pub fn english_only(card: &Value, literal: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    walk(card, literal, &mut out);
    out
}

fn walk(v: &Value, literal: &[&str], out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            // What a Chinese reader sees: the `zh_cn` text, else `content`.
            let shown = (map.get("i18n_content"))
                .and_then(|i| i.get("zh_cn"))
                .or_else(|| map.get("content"));
            if let Some(Value::String(text)) = shown
                && has_english_run(&strip(text, literal))
            {
                out.push(text.clone());
            }
            for (k, child) in map {
                if k != "i18n_content" {
                    walk(child, literal, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|c| walk(c, literal, out)),
        _ => {}
    }
}

fn strip(text: &str, literal: &[&str]) -> String {
    let mut text = text.to_string();
    for l in literal {
        text = text.replace(l, " ");
    }
    // Fenced blocks (``` and ~~~), then inline code: every other piece is code.
    let outside = |text: &str, fence: &str| -> String {
        text.split(fence).step_by(2).collect::<Vec<_>>().join(" ")
    };
    outside(&outside(&outside(&text, "```"), "~~~"), "`")
}

/// Any word of three or more ASCII letters (a name or a mode the caller
/// did not list counts too: list it as literal).
fn has_english_run(text: &str) -> bool {
    // A chat command (`/gsd:status`) or a path is code, written bare.
    text.split_whitespace()
        .filter(|t| !t.trim_start_matches(['*', '(', '[', '|']).starts_with('/'))
        .flat_map(|t| t.split(|c: char| "*_|()[]/:·,.;?!…".contains(c)))
        .any(|w| w.len() >= 3 && w.chars().all(|c| c.is_ascii_alphabetic() || c == '\''))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn untranslated_words_are_found_and_literals_are_not() {
        let card = json!({"body": {"elements": [
            {"tag": "markdown", "content": "Finished in 12 s"},
            {"tag": "markdown", "content": "done", "i18n_content": {"zh_cn": "完成", "en_us": "done"}},
            {"tag": "markdown", "content": "idle", "i18n_content": {"zh_cn": "状态 idle", "en_us": "idle"}},
            {"tag": "markdown", "content": "```\nls the whole tree\n```"},
            {"tag": "markdown", "content": "**demo** · `run the tests`"},
            {"tag": "markdown", "content": "Do you want to proceed?"},
        ]}});
        assert_eq!(
            english_only(&card, &["Do you want to proceed?", "demo"]),
            vec!["Finished in 12 s".to_string(), "状态 idle".to_string()]
        );
    }
}
