//! The turn footer under a result: how long the turn took, and the
//! agent's own figures (tokens, cost, context used) when it reported them.
//! Only reported figures are shown: a figure clawmux did not get is left
//! out, never estimated.

use super::words::duration;
use crate::bridge::texts::Msg;
use crate::i18n::{Lang, Text};
use crate::message::Block;
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
    if let Some(message) = &mut entry.message {
        message.blocks.push(Block::text(footer.text()));
    }
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

    /// The footer goes on the card in both languages (a result card of
    /// agent text alone had none).
    #[test]
    fn the_footer_is_added_in_both_languages() {
        let card = crate::message::Message::new("literal title", crate::message::Tone::Done)
            .push(Block::text("agent text"));
        let mut entries = vec![OutboxEntry {
            uuid: "u".into(),
            op: OutboxOp::Send {
                target: crate::store::state::ChatTarget::Console,
                handle: "h".parse().unwrap(),
                reply_to: None,
                image: None,
            },
            message: Some(card),
            created_ms: 0,
        }];
        let footer = TurnFooter {
            seconds: 12,
            ..Default::default()
        };
        add(&mut entries, &footer);
        let message = entries[0].message.as_ref().unwrap();
        assert_eq!(message.blocks[1], Block::text(footer.text()));
        assert!(message.has_i18n());
        assert_eq!(
            message.to_text_in(Lang::Zh),
            "== literal title ==\nagent text\n⏱ 用时 12 秒\n"
        );
    }
}
