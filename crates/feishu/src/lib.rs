//! Feishu/Lark: card JSON 2.0 model and paginator, Open API client, and the
//! two ways events come in (long connection over WebSocket, or a webhook).
//!
//! # Layout
//! - [`markdown`]: what card text costs in request bytes; escaping.
//! - [`card`]: the typed card JSON 2.0 model and its size budget.
//! - [`paginate`]: split long markdown into cards under the 30 KB limit.
//! - [`api`]: token cache, send/reply/patch with retries, progress throttle.
//! - [`cardkit`]: card entities whose text streams in (create, stream, close).
//! - [`event`]: typed intake events parsed from Feishu's event JSON; dedupe.
//! - [`pbbp2`]: the long connection's protobuf frame.
//! - [`ws`]: the long-connection client (endpoint, pings, acks, reconnect).
//! - [`webhook`]: the HTTP callback server (decryption, signatures).
//! - [`dispatch`]: an event payload to an intake event and Feishu's answer.
//! - [`intake`]: one stream of events whichever way they arrive.
//! - [`pace`]: send pacing within Feishu's per-chat and per-app limits.

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub mod api;
pub mod card;
pub mod cardkit;
pub mod dispatch;
pub mod event;
pub mod intake;
pub mod markdown;
pub mod pace;
pub mod paginate;
pub mod pbbp2;
pub mod webhook;
pub mod ws;

pub use api::{Api, FeishuError, MessageId, ReceiveId};
pub use card::Card;
pub use event::{
    ActionEvent, CardResponse, Dedupe, IntakeEvent, MemoryDedupe, Message, Toast, ToastKind,
};
pub use intake::Intake;

/// Which Feishu deployment to talk to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Domain {
    /// `https://open.feishu.cn`
    Feishu,
    /// `https://open.larksuite.com`
    Lark,
    /// Any base URL (tests use a local server).
    Custom(String),
}

impl Domain {
    pub fn base_url(&self) -> &str {
        match self {
            Domain::Feishu => "https://open.feishu.cn",
            Domain::Lark => "https://open.larksuite.com",
            Domain::Custom(url) => url.trim_end_matches('/'),
        }
    }

    /// `feishu`, `lark`, or a `http(s)://` base URL.
    pub fn parse(s: &str) -> Result<Domain, ConfigError> {
        match s.trim() {
            "" | "feishu" => Ok(Domain::Feishu),
            "lark" | "larksuite" => Ok(Domain::Lark),
            url if url.starts_with("http://") || url.starts_with("https://") => {
                Ok(Domain::Custom(url.to_string()))
            }
            other => Err(ConfigError::BadDomain(other.to_string())),
        }
    }
}

/// Credentials and settings of one Feishu app.
#[derive(Clone, PartialEq, Eq)]
pub struct FeishuConfig {
    pub app_id: String,
    pub app_secret: String,
    pub domain: Domain,
    /// Set when the app encrypts event payloads (webhook mode).
    pub encrypt_key: Option<String>,
    /// Checked against `token` in webhook payloads when set.
    pub verification_token: Option<String>,
}

impl std::fmt::Debug for FeishuConfig {
    // Secrets stay out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FeishuConfig")
            .field("app_id", &self.app_id)
            .field("domain", &self.domain)
            .field("encrypt_key", &self.encrypt_key.as_ref().map(|_| "<set>"))
            .field(
                "verification_token",
                &self.verification_token.as_ref().map(|_| "<set>"),
            )
            .finish_non_exhaustive()
    }
}

/// Why a configuration could not be built.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("{0} is not set (the Feishu app's credentials come from the developer console)")]
    Missing(&'static str),
    #[error("unknown Feishu domain {0:?}: use feishu, lark or an http(s):// base URL")]
    BadDomain(String),
}

impl FeishuConfig {
    pub fn new(app_id: impl Into<String>, app_secret: impl Into<String>, domain: Domain) -> Self {
        FeishuConfig {
            app_id: app_id.into(),
            app_secret: app_secret.into(),
            domain,
            encrypt_key: None,
            verification_token: None,
        }
    }

    /// From `FEISHU_APP_ID`, `FEISHU_APP_SECRET`, `FEISHU_ENCRYPT_KEY`,
    /// `FEISHU_VERIFICATION_TOKEN` and `FEISHU_DOMAIN` (feishu|lark|URL).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Same as [`from_env`](Self::from_env) over any lookup (tests, config files).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let non_empty = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        let app_id = non_empty("FEISHU_APP_ID").ok_or(ConfigError::Missing("FEISHU_APP_ID"))?;
        let app_secret =
            non_empty("FEISHU_APP_SECRET").ok_or(ConfigError::Missing("FEISHU_APP_SECRET"))?;
        let domain = Domain::parse(&non_empty("FEISHU_DOMAIN").unwrap_or_default())?;
        Ok(FeishuConfig {
            app_id,
            app_secret,
            domain,
            encrypt_key: non_empty("FEISHU_ENCRYPT_KEY"),
            verification_token: non_empty("FEISHU_VERIFICATION_TOKEN"),
        })
    }

    pub fn base_url(&self) -> &str {
        self.domain.base_url()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_from_lookup() {
        let env = |k: &str| match k {
            "FEISHU_APP_ID" => Some("cli_1".to_string()),
            "FEISHU_APP_SECRET" => Some("s".to_string()),
            "FEISHU_DOMAIN" => Some("lark".to_string()),
            _ => None,
        };
        let c = FeishuConfig::from_lookup(env).unwrap();
        assert_eq!(c.domain, Domain::Lark);
        assert_eq!(c.base_url(), "https://open.larksuite.com");
        assert_eq!(c.encrypt_key, None);
        assert!(!format!("{c:?}").contains("\"s\""));
        let missing =
            FeishuConfig::from_lookup(|k| (k == "FEISHU_APP_ID").then(|| "x".to_string()));
        assert_eq!(missing, Err(ConfigError::Missing("FEISHU_APP_SECRET")));
        assert_eq!(
            Domain::parse("ftp://x"),
            Err(ConfigError::BadDomain("ftp://x".into()))
        );
    }
}
