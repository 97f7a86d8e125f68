//! `clawmux doctor`: checks the Feishu configuration from the environment by
//! fetching a tenant token, asking for a long-connection endpoint and
//! opening it, and says exactly what is wrong. A refusal Feishu means for
//! good (forbidden, authentication, connection limit) fails the check. It
//! also compares this host's clock with the `Date` of Feishu's answer:
//! webhook mode refuses events whose timestamp is further off than
//! `MAX_TIMESTAMP_SKEW_SECS`.

use super::out;
use std::process::ExitCode;

use clawmux::feishu::api::RetryPolicy;
use clawmux::feishu::webhook::MAX_TIMESTAMP_SKEW_SECS;
use clawmux::feishu::{Api, FeishuConfig, FeishuError, ws};
use tokio::time::Duration;

#[derive(clap::Args)]
pub struct Args {
    /// Instead: check that detection still works with the installed Claude
    /// Code (`$CLAWMUX_CLAUDE` or `claude` on PATH), run offline against a
    /// built-in fake API.
    #[arg(long)]
    agent: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.agent {
        return super::agent_check::run();
    }
    let config =
        FeishuConfig::from_env().map_err(|e| anyhow::anyhow!("Feishu is not configured: {e}"))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(check(config))
}

async fn check(config: FeishuConfig) -> anyhow::Result<ExitCode> {
    out!("app {} at {}", config.app_id, config.base_url());
    // Doctor answers quickly: two attempts, short backoff.
    let retry = RetryPolicy {
        max_attempts: 2,
        base_delay: Duration::from_millis(500),
        max_delay: Duration::from_secs(1),
    };
    let api = Api::with_retry(config.clone(), retry);
    match api.tenant_token().await {
        Ok(_) => out!("ok: credentials accepted (tenant access token fetched)"),
        Err(e) => anyhow::bail!("{}", explain(&config, &e)),
    }
    match clock_skew(&config).await {
        Ok(skew) if skew.unsigned_abs() > MAX_TIMESTAMP_SKEW_SECS => out!(
            "warning: this host's clock is {} s {} Feishu's: webhook mode refuses every event more than {MAX_TIMESTAMP_SKEW_SECS} s off; set the clock (NTP)",
            skew.unsigned_abs(),
            if skew > 0 { "behind" } else { "ahead of" }
        ),
        Ok(skew) => out!(
            "ok: clock within {} s of Feishu's (webhook mode needs ±{MAX_TIMESTAMP_SKEW_SECS} s)",
            skew.unsigned_abs()
        ),
        Err(e) => out!("warning: cannot compare this host's clock with Feishu's: {e}"),
    }
    match ws::check_endpoint(&config).await {
        Ok(()) => out!("ok: long connection endpoint available (events need no public URL)"),
        Err(e) if e.is_fatal() => anyhow::bail!(
            "Feishu refuses the long connection for good: {e}: {}",
            e.advice()
        ),
        Err(e) => out!(
            "warning: long connection unavailable: {e}; enable \"long connection\" event delivery in the app's console, or use webhook mode"
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// Feishu's clock minus this host's, in seconds (positive: the host is
/// behind), from the `Date` header of an answer (1 s resolution).
async fn clock_skew(config: &FeishuConfig) -> Result<i64, String> {
    let url = format!(
        "{}/open-apis/auth/v3/tenant_access_token/internal",
        config.base_url()
    );
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| e.to_string())?;
    let sent = std::time::SystemTime::now();
    let resp =
        (http.post(url).json(&serde_json::json!({})).send().await).map_err(|e| e.to_string())?;
    let received = std::time::SystemTime::now();
    let date = (resp.headers().get("date"))
        .and_then(|v| v.to_str().ok())
        .ok_or("no Date header in Feishu's answer")?;
    let theirs = httpdate::parse_http_date(date).map_err(|e| format!("Date {date:?}: {e}"))?;
    // Our time at the middle of the exchange.
    let ours = sent + received.duration_since(sent).unwrap_or_default() / 2;
    let secs = |t: std::time::SystemTime| {
        t.duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0)
    };
    Ok((secs(theirs) - secs(ours)).round() as i64)
}

fn explain(config: &FeishuConfig, e: &FeishuError) -> String {
    match e {
        FeishuError::Api { code, msg, .. } => format!(
            "Feishu refused the credentials (code {code}: {msg}): check FEISHU_APP_ID ({}) and FEISHU_APP_SECRET against the app's console page",
            config.app_id
        ),
        FeishuError::Network(m) => format!(
            "cannot reach {}: {m}: check the network and FEISHU_DOMAIN (feishu, lark or a URL)",
            config.base_url()
        ),
        FeishuError::GaveUp { last, .. } => explain(config, last),
        other => format!("token request failed: {other}"),
    }
}
