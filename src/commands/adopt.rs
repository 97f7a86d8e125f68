//! `clawmux adopt`: watch a pane the user already runs, as the daemon's
//! `/gsd:adopt` does (never created, resized or restarted), and print its
//! detections live, one line each, until Ctrl-C or the pane closes;
//! stopping lets go of it, leaving it as it was.

use super::watch::print_detections;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clawmux::bridge::config::Config;
use clawmux::bridge::panes::hosts::{AdoptTarget, Hosts, bind_adopted};
use clawmux::detect::{DetectorConfig, Millis, PaneWatcher, Profiles};
use clawmux::tmux::ClientEvent;

use super::UsageError;

#[derive(clap::Args)]
pub struct Args {
    /// The pane: `SESSION[:WINDOW.PANE][@HOST]` (HOST from the config's
    /// `[hosts]`; without it, the `[tmux]` server).
    pub target: String,
    /// Configuration file (its `[tmux]` and `[hosts]` say where servers are).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// One JSON object a line.
    #[arg(long)]
    pub json: bool,
    /// Detection profile (default: the config's).
    #[arg(long)]
    pub profile: Option<String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let path = (args.config.clone())
        .or_else(|| super::serve::default_config_path(&clawmux::store::state_dir()));
    let config = Config::load(path.as_deref()).map_err(|e| UsageError(e.to_string()))?;
    let target = AdoptTarget::parse(&args.target).map_err(|e| UsageError(e.to_string()))?;
    let profile_name = args.profile.clone().unwrap_or(config.agent.profile.clone());
    let profile = Profiles::defaults()?
        .get(&profile_name)
        .map_err(|e| UsageError(e.to_string()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let hosts = Hosts::new(&config);
        let watch = hosts
            .watch(target.host.as_deref())
            .map_err(|e| UsageError(e.to_string()))?;
        let mut spec = watch.server_spec();
        let location = spec.locate(&target.tmux_target()).await?;
        bind_adopted(&mut spec, &location.adopted());
        let (mut agent, _) = watch.attach(&spec, false).await?;
        eprintln!(
            "clawmux: watching pane {} of session {} ({}x{}) on {}; Ctrl-C lets go of it",
            location.pane,
            location.session,
            agent.width,
            agent.height,
            watch.host_name()
        );
        let epoch = Instant::now();
        let now = || Millis(u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX));
        let mut watcher = PaneWatcher::new(
            agent.pane,
            profile,
            DetectorConfig::default(),
            agent.width,
            agent.height,
        );
        let mut found = Vec::new();
        if let Ok(screen) = agent.capture().await {
            watcher.feed(now(), &screen, &mut |_| {});
        }
        loop {
            let wake = watcher
                .next_deadline()
                .map(|m| epoch + Duration::from_millis(m.0));
            tokio::select! {
                _ = tokio::signal::ctrl_c() => return Ok(ExitCode::SUCCESS),
                () = sleep_until(wake) => watcher.tick(now(), &mut |d| found.push(d)),
                event = agent.recv() => match event {
                    Some(ClientEvent::Output { pane, data }) if pane == agent.pane => {
                        watcher.feed(now(), &data, &mut |d| found.push(d));
                    }
                    Some(ClientEvent::Resync { pane, screen }) if pane == agent.pane => {
                        watcher.feed(now(), b"\x1b[H\x1b[2J", &mut |_| {});
                        watcher.feed(now(), &screen, &mut |d| found.push(d));
                    }
                    Some(ClientEvent::Ended(end)) => {
                        print_detections(&mut std::io::stdout().lock(), &mut found, args.json)?;
                        eprintln!("clawmux: stopped watching: {end}");
                        return Ok(ExitCode::SUCCESS);
                    }
                    None => return Ok(ExitCode::SUCCESS),
                    Some(_) => {}
                },
            }
            print_detections(&mut std::io::stdout().lock(), &mut found, args.json)?;
        }
    })
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}
