//! The turn footer under a result: how long the turn took, and the
//! agent's own figures (tokens, cost, context used) when it reported them.
//! Only reported figures are shown: a figure clawmux did not get is left
//! out, never estimated.

use serde_json::{Value, json};

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
    /// `⏱ 1 min 5 s · 12,345 tokens · $0.0420 · context 8,000 tokens`.
    pub fn text(&self) -> String {
        let mut parts = vec![format!("⏱ {}", duration(self.seconds))];
        if let Some(t) = self.tokens {
            parts.push(format!("{} tokens", thousands(t)));
        }
        if let Some(c) = self.cost_usd.filter(|c| c.is_finite() && *c >= 0.0) {
            parts.push(format!("${c:.4}"));
        }
        if let Some(c) = self.context_tokens {
            parts.push(format!("context {} tokens", thousands(c)));
        }
        parts.join(" · ")
    }
}

fn duration(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min {} s", s / 60, s % 60),
        s => format!("{} h {} min", s / 3600, (s % 3600) / 60),
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
    if let Some(elements) = entry
        .card
        .pointer_mut("/body/elements")
        .and_then(Value::as_array_mut)
    {
        elements.push(json!({"tag": "markdown", "content": text}));
        entry.text = format!("{}\n{text}", entry.text.trim_end());
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
        assert_eq!(plain.text(), "⏱ 1 min 5 s");
        let full = TurnFooter {
            seconds: 3,
            tokens: Some(12345),
            cost_usd: Some(0.042),
            context_tokens: Some(8000),
        };
        assert_eq!(
            full.text(),
            "⏱ 3 s · 12,345 tokens · $0.0420 · context 8,000 tokens"
        );
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }
}
