//! The turn footer under a result: how long the turn took, and the
//! agent's own figures (tokens, cost, context used) when it reported them.
//! Only reported figures are shown: a figure clawmux did not get is left
//! out, never estimated.

use serde_json::{Value, json};

use super::words::duration;
use crate::bridge::texts::Msg;
use crate::feishu::card::{Card, Element};
use crate::i18n::{Lang, Text};
use crate::store::state::{OutboxEntry, OutboxOp};

/// What the footer can say about a turn.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnFooter {
    pub seconds: u64,
    /// Tokens the turn's API calls used (input with cache, and output),
    /// as the agent's transcript reports them.
    pub tokens: Option<u64>,
    /// Cost in US dollars the agent reported.
    pub cost_usd: Option<f64>,
    /// Tokens in the context at the turn's end (the window's size is not
    /// reported, so no share of it is shown).
    pub context_tokens: Option<u64>,
}

impl TurnFooter {
    /// `⏱ 1 min 5 s · 12,345 tokens · $0.0420 · context 8,000 tokens`
    /// (`⏱ 1 分 5 秒 · 12,345 个令牌 · $0.0420 · 上下文 8,000 个令牌`).
    pub fn text(&self) -> Text {
        let mut parts =
            vec![Msg::FooterTime.with_each(|lang| {
                vec![("duration", duration(self.seconds).get(lang).to_string())]
            })];
        if let Some(t) = self.tokens {
            parts.push(Msg::FooterTokens.with(&[("n", &thousands(t))]));
        }
        if let Some(c) = self.cost_usd.filter(|c| c.is_finite() && *c >= 0.0) {
            parts.push(Text::literal(format!("${c:.4}")));
        }
        if let Some(c) = self.context_tokens {
            parts.push(Msg::FooterContext.with(&[("n", &thousands(c))]));
        }
        let line = |lang: Lang| {
            let parts: Vec<&str> = parts.iter().map(|p| p.get(lang)).collect();
            parts.join(" · ")
        };
        Text::both(line(Lang::En), line(Lang::Zh))
    }
}

/// `n` with a comma between each group of three digits (`12,345`).
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Puts the footer under the last card a result sends (a paginated
/// result's last page, or a long result's summary card).
pub fn add(entries: &mut [OutboxEntry], footer: &TurnFooter) {
    let last = entries
        .iter_mut()
        .rev()
        .find(|e| matches!(e.op, OutboxOp::Send { .. }));
    let Some(entry) = last else { return };
    let text = footer.text();
    // A card of clawmux's own model takes the footer as one of its
    // elements (both languages, and `config.locales` when the card had
    // none yet); another shape gets the same element as JSON.
    let footed = Card::from_value(&entry.card)
        .map(|card| card.push(Element::markdown(&text)))
        .and_then(|card| serde_json::to_value(card).ok());
    match footed {
        Some(card) => entry.card = card,
        None => {
            let Some(elements) =
                (entry.card.pointer_mut("/body/elements")).and_then(Value::as_array_mut)
            else {
                return;
            };
            let mut element = json!({"tag": "markdown", "content": text.get(Lang::En)});
            if let Some(i18n) = text.i18n() {
                element["i18n_content"] = json!(i18n);
            }
            elements.push(element);
        }
    }
    entry.text = format!("{}\n{}", entry.text.trim_end(), text.get(Lang::En));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_reported_figures_are_shown() {
        let plain = TurnFooter {
            seconds: 65,
            ..Default::default()
        };
        assert_eq!(plain.text().get(Lang::En), "⏱ 1 min 5 s");
        assert_eq!(plain.text().get(Lang::Zh), "⏱ 用时 1 分 5 秒");
        let full = TurnFooter {
            seconds: 3,
            tokens: Some(12345),
            cost_usd: Some(0.042),
            context_tokens: Some(8000),
        };
        assert_eq!(
            full.text().get(Lang::En),
            "⏱ 3 s · 12,345 tokens · $0.0420 · context 8,000 tokens"
        );
        assert_eq!(
            full.text().get(Lang::Zh),
            "⏱ 用时 3 秒 · 12,345 个令牌 · $0.0420 · 上下文 8,000 个令牌"
        );
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }

    /// The footer goes on the card in both languages, and the card then
    /// names its locales (a result card of agent text alone had none).
    #[test]
    fn the_footer_is_added_in_both_languages() {
        let card = Card::new("literal title", crate::feishu::card::Template::Green)
            .push(Element::markdown("agent text"));
        let mut entries = vec![OutboxEntry {
            uuid: "u".into(),
            op: OutboxOp::Send {
                target: crate::store::state::ChatTarget::Console,
                handle: "h".parse().unwrap(),
                reply_to: None,
                image: None,
            },
            card: serde_json::to_value(&card).unwrap(),
            text: "agent text".into(),
            created_ms: 0,
        }];
        let footer = TurnFooter {
            seconds: 12,
            ..Default::default()
        };
        add(&mut entries, &footer);
        let card = &entries[0].card;
        let last = &card["body"]["elements"][1];
        assert_eq!(last["i18n_content"]["zh_cn"], "⏱ 用时 12 秒");
        assert_eq!(last["i18n_content"]["en_us"], "⏱ 12 s");
        assert_eq!(card["config"]["locales"], json!(["zh_cn", "en_us"]));
        assert_eq!(entries[0].text, "agent text\n⏱ 12 s");
    }
}
