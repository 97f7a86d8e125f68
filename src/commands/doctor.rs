//! `clawmux doctor`: checks everything a deployment needs and prints every
//! finding at once, each with its fix: tmux and its version, the fonts the
//! pictures need, the state and config directories, each configured agent
//! and its version against the release tested, Claude Code's hooks, and,
//! when credentials are set, Feishu: a tenant token, the host clock against
//! the `Date` of Feishu's answer (webhook mode refuses events whose
//! timestamp is further off than `MAX_TIMESTAMP_SKEW_SECS`) and the long
//! connection. Exits 1 when a finding blocks serving (an `error`), else 0;
//! `--json` prints the findings as an array for scripts.

mod local;

use super::out;
use std::process::ExitCode;

use clawmux::feishu::api::RetryPolicy;
use clawmux::feishu::webhook::MAX_TIMESTAMP_SKEW_SECS;
use clawmux::feishu::ws::{self, WsError};
use clawmux::feishu::{Api, FeishuConfig, FeishuError};
use tokio::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    /// Instead: check that detection still works with the installed Claude
    /// Code (`$CLAWMUX_CLAUDE` or `claude` on PATH), run offline against a
    /// built-in fake API.
    #[arg(long)]
    agent: bool,
    /// Print the findings as a JSON array of `{check, ok, severity, detail,
    /// fix}` instead of lines.
    #[arg(long)]
    json: bool,
    /// The config file checked (default: as `serve` finds it).
    #[arg(long, value_name = "FILE")]
    config: Option<std::path::PathBuf>,
}

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Ok,
    /// Serving works, something is lesser (pictures, webhook mode, an
    /// untested release).
    Warning,
    /// Serving does not work until it is fixed.
    Error,
}

impl Severity {
    fn label(self) -> &'static str {
        match self {
            Severity::Ok => "ok",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One thing checked and what was found.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Finding {
    pub check: &'static str,
    pub ok: bool,
    pub severity: Severity,
    pub detail: String,
    /// What to do; empty when nothing is needed.
    pub fix: String,
}

impl Finding {
    pub fn ok(check: &'static str, detail: impl Into<String>) -> Finding {
        Finding::new(check, Severity::Ok, detail, "")
    }
    pub fn warn(check: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Finding {
        Finding::new(check, Severity::Warning, detail, fix)
    }
    pub fn error(
        check: &'static str,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Finding {
        Finding::new(check, Severity::Error, detail, fix)
    }
    fn new(
        check: &'static str,
        severity: Severity,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Finding {
        Finding {
            check,
            ok: severity == Severity::Ok,
            severity,
            detail: detail.into(),
            fix: fix.into(),
        }
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.agent {
        return super::agent_check::run();
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut findings = runtime.block_on(local::check(args.config.as_deref()));
    match FeishuConfig::from_env() {
        Ok(config) => findings.extend(runtime.block_on(feishu(config))),
        Err(_) => findings.push(missing_credentials()),
    }
    report(&findings, args.json)
}

/// Every Feishu variable that is missing, named in one finding.
fn missing_credentials() -> Finding {
    let set = |k: &str| std::env::var(k).is_ok_and(|v| !v.trim().is_empty());
    let missing: Vec<&str> = ["FEISHU_APP_ID", "FEISHU_APP_SECRET"]
        .into_iter()
        .filter(|k| !set(k))
        .collect();
    let detail = if missing.is_empty() {
        match FeishuConfig::from_env() {
            Err(e) => format!("Feishu is not configured: {e}"),
            Ok(_) => "Feishu is configured".into(),
        }
    } else {
        format!(
            "Feishu is not configured: {} not set (the Feishu checks were skipped)",
            missing.join(" and ")
        )
    };
    Finding::warn(
        "feishu-credentials",
        detail,
        "set FEISHU_APP_ID and FEISHU_APP_SECRET from the app's console page (FEISHU_DOMAIN=lark for Lark); meanwhile `clawmux doctor --agent` checks detection with the installed Claude Code and `clawmux serve --console` runs the bridge in this terminal",
    )
}

fn report(findings: &[Finding], json: bool) -> anyhow::Result<ExitCode> {
    let blocking: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .collect();
    if json {
        out!("{}", serde_json::to_string_pretty(findings)?);
    } else {
        for f in findings {
            out!("{:<18} {}: {}", f.check, f.severity.label(), f.detail);
            if !f.fix.is_empty() {
                out!("{:<18}   fix: {}", "", f.fix);
            }
        }
    }
    if blocking.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    for f in &blocking {
        eprintln!("clawmux doctor: {}: {}: {}", f.check, f.detail, f.fix);
    }
    Ok(ExitCode::FAILURE)
}

async fn feishu(config: FeishuConfig) -> Vec<Finding> {
    let mut found = Vec::new();
    // Doctor answers quickly: two attempts, short backoff.
    let retry = RetryPolicy {
        max_attempts: 2,
        base_delay: Duration::from_millis(500),
        max_delay: Duration::from_secs(1),
    };
    let api = Api::with_retry(config.clone(), retry);
    match api.tenant_token().await {
        Ok(_) => found.push(Finding::ok(
            "feishu-credentials",
            format!(
                "credentials accepted (tenant access token fetched) for app {} at {}",
                config.app_id,
                config.base_url()
            ),
        )),
        Err(e) => {
            let (detail, fix) = explain(&config, &e);
            found.push(Finding::error("feishu-credentials", detail, fix));
            return found;
        }
    }
    found.push(match clock_skew(&config).await {
        Ok(skew) if skew.unsigned_abs() > MAX_TIMESTAMP_SKEW_SECS => Finding::warn(
            "clock",
            format!(
                "this host's clock is {} s {} Feishu's: webhook mode refuses every event more than {MAX_TIMESTAMP_SKEW_SECS} s off",
                skew.unsigned_abs(),
                if skew > 0 { "behind" } else { "ahead of" }
            ),
            "set the clock (NTP, e.g. `sudo timedatectl set-ntp true`)",
        ),
        Ok(skew) => Finding::ok(
            "clock",
            format!(
                "clock within {} s of Feishu's (webhook mode needs ±{MAX_TIMESTAMP_SKEW_SECS} s)",
                skew.unsigned_abs()
            ),
        ),
        Err(e) => Finding::warn(
            "clock",
            format!("cannot compare this host's clock with Feishu's: {e}"),
            "check the network to Feishu; webhook mode needs the clock within ±300 s",
        ),
    });
    // Without the bot capability no chat can add the app, and no message
    // reaches it.
    found.push(match api.bot_open_id().await {
        Ok(id) => Finding::ok("feishu-bot", format!("the app is a bot (open_id {id})")),
        Err(e) => Finding::error(
            "feishu-bot",
            format!("the app has no bot: bot/v3/info answered {e}"),
            "app console → Add features (添加应用能力) → Bot (机器人), then publish a version (版本管理与发布)",
        ),
    });
    // The intake cannot work without it: every refusal is an error, and
    // says whether the console or the network is the cause.
    found.push(match ws::check_endpoint(&config).await {
        Ok(()) => Finding::ok(
            "feishu-connection",
            "long connection endpoint available (events need no public URL)",
        ),
        Err(e) if e.is_fatal() => Finding::error(
            "feishu-connection",
            format!("Feishu refuses the long connection for good (the app's console): {e}"),
            e.advice(),
        ),
        Err(e @ (WsError::Refused { .. } | WsError::Handshake { .. })) => Finding::error(
            "feishu-connection",
            format!("Feishu refused the long connection (the app's console): {e}"),
            "app console → Events & Callbacks (事件与回调): choose the persistent connection (长连接) while `clawmux serve` runs, then publish a version; or use webhook mode",
        ),
        Err(e) => Finding::error(
            "feishu-connection",
            format!("the long connection could not be made (the network): {e}"),
            "check that this host reaches Feishu (a proxy or firewall), or use webhook mode",
        ),
    });
    found
}

/// Why Feishu's clock could not be read.
#[derive(Debug, thiserror::Error)]
enum SkewError {
    #[error("cannot ask Feishu: {0}")]
    Http(#[from] reqwest::Error),
    #[error("no Date header in Feishu's answer")]
    NoDate,
    #[error("Date {date:?}: {source}")]
    BadDate {
        date: String,
        #[source]
        source: jiff::Error,
    },
}

/// Feishu's clock minus this host's, in seconds (positive: the host is
/// behind), from the `Date` header of an answer (1 s resolution).
async fn clock_skew(config: &FeishuConfig) -> Result<i64, SkewError> {
    let url = format!(
        "{}/open-apis/auth/v3/tenant_access_token/internal",
        config.base_url()
    );
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()?;
    let sent = std::time::SystemTime::now();
    let resp = http.post(url).json(&serde_json::json!({})).send().await?;
    let received = std::time::SystemTime::now();
    let date = (resp.headers().get("date"))
        .and_then(|v| v.to_str().ok())
        .ok_or(SkewError::NoDate)?;
    // An HTTP date (`Fri, 04 Dec 2026 07:44:18 GMT`) is an RFC 2822 one.
    let theirs = jiff::fmt::rfc2822::parse(date)
        .map_err(|source| SkewError::BadDate {
            date: date.to_owned(),
            source,
        })?
        .timestamp()
        .as_millisecond() as f64
        / 1000.0;
    // Our time at the middle of the exchange.
    let ours = sent + received.duration_since(sent).unwrap_or_default() / 2;
    let ours = ours
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0);
    Ok((theirs - ours).round() as i64)
}

/// What went wrong fetching a token, and what to do.
fn explain(config: &FeishuConfig, e: &FeishuError) -> (String, String) {
    match e {
        FeishuError::Api { code, msg, .. } => (
            format!("Feishu refused the credentials (code {code}: {msg})"),
            format!(
                "check FEISHU_APP_ID ({}) and FEISHU_APP_SECRET against the app's console page",
                config.app_id
            ),
        ),
        FeishuError::Network(m) => (
            format!("cannot reach {}: {m}", config.base_url()),
            "check the network and FEISHU_DOMAIN (feishu, lark or a URL)".into(),
        ),
        FeishuError::GaveUp { last, .. } => explain(config, last),
        other => (
            format!("token request failed: {other}"),
            "run again; if it persists, check Feishu's status".into(),
        ),
    }
}
