//! Who may talk to the bot and who may approve, like OpenClaw's access
//! policy: a DM policy (pairing, allowlist, open, disabled), a group policy
//! with an optional mention requirement, approvers, and a per-sender rate
//! limit.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::bridge::config::{DmPolicy, GroupPolicy, PolicyConfig};

/// The rate limit's window.
const RATE_WINDOW: Duration = Duration::from_secs(60);
/// Senders tracked by the rate limiter at most; the idle ones go first.
const MAX_TRACKED_SENDERS: usize = 10_000;

/// Where a message came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatKind {
    Direct,
    Group,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Unknown sender under `dm_policy = "pairing"`: send them a code.
    Pair,
    /// Denied; `reason` goes to the event log.
    Deny {
        reason: &'static str,
    },
    /// Ignored silently (a group message that does not mention the bot).
    Ignore,
    /// Allowed, but over the per-minute rate limit.
    Limited,
}

/// Each sender's messages of the last [`RATE_WINDOW`]: one per daemon,
/// shared (cloned) by admission and the image fetcher, so that an image is
/// fetched only for a message within the limit, and counted once.
#[derive(Clone, Default)]
pub struct RateWindow(Arc<Mutex<HashMap<String, VecDeque<Instant>>>>);

pub struct Policy {
    config: PolicyConfig,
    rates: RateWindow,
}

impl Policy {
    pub fn new(config: PolicyConfig) -> Policy {
        Policy::with_rates(config, RateWindow::default())
    }

    /// A policy counting its senders' messages in `rates`.
    pub fn with_rates(config: PolicyConfig, rates: RateWindow) -> Policy {
        Policy { config, rates }
    }

    /// May `sender` (with `paired`, the senders approved by pairing) send
    /// this message? Rate limiting counts only allowed messages.
    pub fn check(
        &self,
        sender: &str,
        chat: ChatKind,
        chat_id: &str,
        mentions_bot: bool,
        paired: &[String],
        now: Instant,
    ) -> Decision {
        let decision = self.decide(sender, chat, chat_id, mentions_bot, paired);
        if decision == Decision::Allow && !self.within_rate(sender, now) {
            return Decision::Limited;
        }
        decision
    }

    /// [`Policy::check`] without the rate limit (which only admission
    /// counts): whom and which chats the bot serves at all.
    pub fn decide(
        &self,
        sender: &str,
        chat: ChatKind,
        chat_id: &str,
        mentions_bot: bool,
        paired: &[String],
    ) -> Decision {
        let c = &self.config;
        let listed = c.allow_from.iter().any(|a| a == sender) || paired.iter().any(|p| p == sender);
        match chat {
            ChatKind::Direct => match c.dm_policy {
                DmPolicy::Disabled => Decision::Deny {
                    reason: "direct messages are disabled",
                },
                DmPolicy::Open if c.allow_from.iter().any(|a| a == "*") || listed => {
                    Decision::Allow
                }
                DmPolicy::Open | DmPolicy::Allowlist if !listed => Decision::Deny {
                    reason: "sender is not in allow_from",
                },
                DmPolicy::Pairing if !listed => Decision::Pair,
                _ => Decision::Allow,
            },
            ChatKind::Group => match c.group_policy {
                GroupPolicy::Disabled => Decision::Deny {
                    reason: "group chats are disabled",
                },
                _ if c.require_mention && !mentions_bot => Decision::Ignore,
                GroupPolicy::Allowlist if !c.group_allow_from.iter().any(|g| g == chat_id) => {
                    Decision::Deny {
                        reason: "group is not in group_allow_from",
                    }
                }
                // In an allowed group, senders still need to be known unless open.
                _ if c.dm_policy != DmPolicy::Open && !listed => Decision::Deny {
                    reason: "sender is not in allow_from",
                },
                _ => Decision::Allow,
            },
        }
    }

    /// May `user` answer approvals? Approvers when listed, else any sender
    /// allowed to talk to the bot.
    pub fn may_approve(&self, user: &str, paired: &[String]) -> bool {
        let c = &self.config;
        if !c.approvers.is_empty() {
            return c.approvers.iter().any(|a| a == user);
        }
        c.dm_policy == DmPolicy::Open && c.allow_from.iter().any(|a| a == "*")
            || c.allow_from.iter().any(|a| a == user)
            || paired.iter().any(|p| p == user)
    }

    pub fn reply_to_denied(&self) -> bool {
        self.config.reply_to_denied
    }

    fn within_rate(&self, sender: &str, now: Instant) -> bool {
        // Held only here, never across an await; a panic elsewhere while
        // it was held leaves counts that are still counts.
        let mut recent = (self.rates.0.lock()).unwrap_or_else(|poisoned| poisoned.into_inner());
        if recent.len() >= MAX_TRACKED_SENDERS && !recent.contains_key(sender) {
            recent.retain(|_, times| {
                times
                    .back()
                    .is_some_and(|t| now.duration_since(*t) < RATE_WINDOW)
            });
        }
        let times = recent.entry(sender.to_string()).or_default();
        while times
            .front()
            .is_some_and(|t| now.duration_since(*t) >= RATE_WINDOW)
        {
            times.pop_front();
        }
        if times.len() >= self.config.rate_per_minute as usize {
            return false;
        }
        times.push_back(now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(f: impl FnOnce(&mut PolicyConfig)) -> Policy {
        let mut c = PolicyConfig::default();
        f(&mut c);
        Policy::new(c)
    }

    #[test]
    fn direct_message_policies() {
        let now = Instant::now();
        let p = policy(|c| c.allow_from = vec!["ou_a".into()]);
        assert_eq!(
            p.check("ou_a", ChatKind::Direct, "", false, &[], now),
            Decision::Allow
        );
        assert_eq!(
            p.check("ou_x", ChatKind::Direct, "", false, &[], now),
            Decision::Pair
        );
        assert_eq!(
            p.check("ou_x", ChatKind::Direct, "", false, &["ou_x".into()], now),
            Decision::Allow
        );

        let p = policy(|c| c.dm_policy = DmPolicy::Allowlist);
        assert!(matches!(
            p.check("ou_x", ChatKind::Direct, "", false, &[], now),
            Decision::Deny { .. }
        ));

        let p = policy(|c| {
            c.dm_policy = DmPolicy::Open;
            c.allow_from = vec!["*".into()];
        });
        assert_eq!(
            p.check("ou_anyone", ChatKind::Direct, "", false, &[], now),
            Decision::Allow
        );

        let p = policy(|c| c.dm_policy = DmPolicy::Disabled);
        assert!(matches!(
            p.check("ou_a", ChatKind::Direct, "", false, &[], now),
            Decision::Deny { .. }
        ));
    }

    #[test]
    fn group_policies() {
        let now = Instant::now();
        let p = policy(|c| {
            c.allow_from = vec!["ou_a".into()];
            c.group_allow_from = vec!["oc_g".into()];
        });
        assert_eq!(
            p.check("ou_a", ChatKind::Group, "oc_g", false, &[], now),
            Decision::Ignore
        );
        assert_eq!(
            p.check("ou_a", ChatKind::Group, "oc_g", true, &[], now),
            Decision::Allow
        );
        assert!(matches!(
            p.check("ou_a", ChatKind::Group, "oc_other", true, &[], now),
            Decision::Deny { .. }
        ));
        assert!(matches!(
            p.check("ou_x", ChatKind::Group, "oc_g", true, &[], now),
            Decision::Deny { .. }
        ));
    }

    #[test]
    fn approvers_and_rate_limit() {
        let now = Instant::now();
        let p = policy(|c| {
            c.allow_from = vec!["ou_a".into(), "ou_b".into()];
            c.approvers = vec!["ou_b".into()];
            c.rate_per_minute = 2;
        });
        assert!(!p.may_approve("ou_a", &[]));
        assert!(p.may_approve("ou_b", &[]));
        assert_eq!(
            p.check("ou_a", ChatKind::Direct, "", false, &[], now),
            Decision::Allow
        );
        assert_eq!(
            p.check("ou_a", ChatKind::Direct, "", false, &[], now),
            Decision::Allow
        );
        assert_eq!(
            p.check("ou_a", ChatKind::Direct, "", false, &[], now),
            Decision::Limited
        );
        assert_eq!(
            p.check("ou_b", ChatKind::Direct, "", false, &[], now),
            Decision::Allow,
            "per sender"
        );
        let later = now + RATE_WINDOW;
        assert_eq!(
            p.check("ou_a", ChatKind::Direct, "", false, &[], later),
            Decision::Allow
        );
    }
}
