//! The two languages clawmux writes in, and text that carries both.
//!
//! Every word clawmux itself puts in a card or a message exists in English
//! (`en_us`) and Simplified Chinese (`zh_cn`): a [`Text`] holds both. A
//! Feishu card carries both at once (each text's `content` plus its
//! `i18n_content`, see `feishu::card`) and each reader's client shows its
//! own; the console and `clawmux run` pick one, by the locale environment
//! ([`Lang::from_env`]). What an agent wrote (answers, screens, command and
//! file names) is never translated: it is a [`Text::literal`], the same
//! string in both languages, filled into the translated wording as it is.
//!
//! The wording itself is the catalogue `bridge::texts::catalogue`.

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

use std::fmt;

use serde::{Deserialize, Serialize};

/// A language clawmux writes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash, Serialize, Deserialize)]
pub enum Lang {
    /// English, Feishu's `en_us`: the default.
    #[default]
    #[serde(rename = "en_us")]
    En,
    /// Simplified Chinese, Feishu's `zh_cn`.
    #[serde(rename = "zh_cn")]
    Zh,
}

/// A locale name that is neither of clawmux's languages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown locale `{0}`: clawmux writes in `en_us` (English) or `zh_cn` (简体中文)")]
pub struct UnknownLocale(pub String);

impl Lang {
    /// Both languages, in the order cards list them.
    pub const ALL: [Lang; 2] = [Lang::Zh, Lang::En];

    /// Feishu's locale code (`en_us`, `zh_cn`).
    pub fn code(self) -> &'static str {
        match self {
            Lang::En => "en_us",
            Lang::Zh => "zh_cn",
        }
    }

    /// Feishu's locale code, as a config or a flag names it.
    pub fn parse(code: &str) -> Result<Lang, UnknownLocale> {
        match code {
            "en_us" => Ok(Lang::En),
            "zh_cn" => Ok(Lang::Zh),
            other => Err(UnknownLocale(other.to_string())),
        }
    }

    /// The language of a POSIX locale value (`zh_CN.UTF-8`, `en_US`, `C`):
    /// any `zh…` is Chinese, anything else English.
    pub fn from_posix(value: &str) -> Lang {
        if value.trim().to_ascii_lowercase().starts_with("zh") {
            Lang::Zh
        } else {
            Lang::En
        }
    }

    /// The terminal user's language, as POSIX ranks the variables: the
    /// first non-empty of `LC_ALL`, `LC_MESSAGES`, `LANG`.
    pub fn from_env() -> Lang {
        Self::from_vars(|k| std::env::var(k).ok())
    }

    /// [`Lang::from_env`] over any variable lookup (tests pass their own).
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Lang {
        ["LC_ALL", "LC_MESSAGES", "LANG"]
            .into_iter()
            .filter_map(get)
            .find(|v| !v.trim().is_empty())
            .map(|v| Lang::from_posix(&v))
            .unwrap_or_default()
    }
}

impl fmt::Display for Lang {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.code())
    }
}

/// A text in both languages. Made from a string it is literal (the same in
/// both: an agent's words, a name); translated wording comes from the
/// catalogue.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Text {
    en: String,
    zh: String,
}

impl Text {
    /// The same words in both languages (never translated).
    pub fn literal(s: impl Into<String>) -> Text {
        let en = s.into();
        Text { zh: en.clone(), en }
    }

    /// Wording given in each language.
    pub fn both(en: impl Into<String>, zh: impl Into<String>) -> Text {
        Text {
            en: en.into(),
            zh: zh.into(),
        }
    }

    pub fn get(&self, lang: Lang) -> &str {
        match lang {
            Lang::En => &self.en,
            Lang::Zh => &self.zh,
        }
    }

    /// True when both languages read the same (nothing to choose).
    pub fn is_literal(&self) -> bool {
        self.en == self.zh
    }

    /// The same change made to each language (cutting, escaping).
    pub fn map(&self, f: impl Fn(&str) -> String) -> Text {
        Text {
            en: f(&self.en),
            zh: f(&self.zh),
        }
    }

    /// Both languages' words followed by `tail` (joined as given).
    pub fn join(&self, sep: &str, tail: &Text) -> Text {
        Text {
            en: join_nonempty(&self.en, sep, &tail.en),
            zh: join_nonempty(&self.zh, sep, &tail.zh),
        }
    }

    /// The words for Feishu's `i18n_content`, or None when literal.
    pub fn i18n(&self) -> Option<I18n> {
        (!self.is_literal()).then(|| I18n {
            zh_cn: self.zh.clone(),
            en_us: self.en.clone(),
        })
    }
}

/// Saved as a string when literal (an agent's words, kept once) and as
/// `{"en": …, "zh": …}` when translated.
impl Serialize for Text {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.is_literal() {
            true => serializer.serialize_str(&self.en),
            false => SavedText::Both {
                en: self.en.clone(),
                zh: self.zh.clone(),
            }
            .serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Text, D::Error> {
        Ok(match SavedText::deserialize(deserializer)? {
            SavedText::Literal(s) => Text::literal(s),
            SavedText::Both { en, zh } => Text { en, zh },
        })
    }
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum SavedText {
    Literal(String),
    Both { en: String, zh: String },
}

fn join_nonempty(a: &str, sep: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}{sep}{b}"),
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text::literal(s)
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text::literal(s)
    }
}

impl From<&String> for Text {
    fn from(s: &String) -> Text {
        Text::literal(s.as_str())
    }
}

impl From<&Text> for Text {
    fn from(t: &Text) -> Text {
        t.clone()
    }
}

/// Feishu's `i18n_content`: a text per locale code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct I18n {
    pub zh_cn: String,
    pub en_us: String,
}

impl I18n {
    pub fn get(&self, lang: Lang) -> &str {
        match lang {
            Lang::En => &self.en_us,
            Lang::Zh => &self.zh_cn,
        }
    }
}

/// `template` with each `{name}` replaced by its value in `args`, in one
/// pass (a value's own braces stay as they are); an unknown name stays.
pub fn fill(template: &str, args: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let value = after.find('}').and_then(|close| {
            let name = &after[..close];
            let v = args.iter().find(|(k, _)| *k == name).map(|(_, v)| *v)?;
            Some((v, close))
        });
        match value {
            Some((v, close)) => {
                out.push_str(v);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The `{name}` placeholders of a template, sorted.
pub fn placeholders(template: &str) -> Vec<&str> {
    let mut out: Vec<&str> = template
        .split('{')
        .skip(1)
        .filter_map(|s| s.split_once('}').map(|(name, _)| name))
        .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn posix_locales_pick_the_language_by_rank() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(Lang::from_vars(env(&[])), Lang::En);
        assert_eq!(Lang::from_vars(env(&[("LANG", "zh_CN.UTF-8")])), Lang::Zh);
        assert_eq!(Lang::from_vars(env(&[("LANG", "zh_TW.UTF-8")])), Lang::Zh);
        assert_eq!(Lang::from_vars(env(&[("LANG", "C.UTF-8")])), Lang::En);
        // LC_ALL wins over LANG; an empty one is skipped.
        let both = env(&[("LC_ALL", "en_US.UTF-8"), ("LANG", "zh_CN.UTF-8")]);
        assert_eq!(Lang::from_vars(both), Lang::En);
        let empty = env(&[("LC_ALL", ""), ("LANG", "zh_CN.UTF-8")]);
        assert_eq!(Lang::from_vars(empty), Lang::Zh);
        assert_eq!(
            Lang::from_vars(env(&[("LC_MESSAGES", "zh_CN"), ("LANG", "en_US")])),
            Lang::Zh
        );
    }

    #[test]
    fn locale_codes_parse_and_refuse_by_name() {
        assert_eq!(Lang::parse("zh_cn"), Ok(Lang::Zh));
        assert_eq!(Lang::parse("en_us"), Ok(Lang::En));
        let e = Lang::parse("zh_CN").unwrap_err();
        assert!(e.to_string().contains("`zh_CN`"), "{e}");
        assert!(e.to_string().contains("zh_cn"), "{e}");
    }

    #[test]
    fn fill_replaces_once_and_keeps_unknown_braces() {
        let args = [("name", "{who}"), ("who", "x")];
        assert_eq!(fill("a {name} b {who}", &args), "a {who} b x");
        assert_eq!(fill("{nope} {", &args), "{nope} {");
        assert_eq!(fill("`{name}`", &[("name", "日本")]), "`日本`");
        assert_eq!(placeholders("{b} x {a} {} {a b}"), vec!["a", "b"]);
    }

    #[test]
    fn literal_text_has_no_i18n_and_translated_text_has_both() {
        assert_eq!(Text::from("ls -la").i18n(), None);
        let t = Text::both("Done", "已完成");
        let i = t.i18n().unwrap();
        assert_eq!((i.en_us.as_str(), i.zh_cn.as_str()), ("Done", "已完成"));
        assert_eq!(t.get(Lang::Zh), "已完成");
        let joined = t.join(": ", &Text::from("demo"));
        assert_eq!(joined.get(Lang::Zh), "已完成: demo");
    }
}
