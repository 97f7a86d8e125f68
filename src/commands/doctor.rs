//! `clawmux doctor`: checks the Feishu configuration from the environment by
//! fetching a tenant token, asking for a long-connection endpoint and
//! opening it, and says exactly what is wrong. A refusal Feishu means for
//! good (forbidden, authentication, connection limit) fails the check.

use super::out;
use std::process::ExitCode;

use clawmux::feishu::api::RetryPolicy;
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
