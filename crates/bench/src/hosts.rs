//! `clawmux bench --hosts N`: the gateway watching projects on N hosts over
//! `ssh` (loopback sshds standing in for the machines) against the same
//! tmux servers and panes watched locally, in the same run: idle CPU, memory per
//! host (the gateway's and its ssh clients'), and detection latency of
//! time-stamped marker lines, p50/p99, as ssh-to-local ratios.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::BenchError;
use super::procfs::{children, peak_rss, rss, tree_cpu};
use super::roles::{MarkerReport, read_report};
use super::scenario::{Helper, PANE_SIZE, ReportDir, Settings, shell_quote};
use super::server::BenchServer;
use super::sshd::LoopbackSshd;
use super::watcher::WatcherReport;

/// Marker panes on each host.
pub const PANES_PER_HOST: usize = 2;
/// How long the markers wait for their report files after they finish.
const REPORT_GRACE: Duration = Duration::from_secs(20);
const REPORT_POLL: Duration = Duration::from_millis(100);

/// One server the hosts watcher watches: its tmux command and socket.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerArg {
    pub command: Vec<String>,
    pub socket: String,
}

/// One design's figures: the same panes on one local server, or spread
/// over hosts behind ssh.
#[derive(Debug, Clone, Serialize)]
pub struct HostsRun {
    /// Gateway CPU with its children (the ssh clients), idle panes,
    /// seconds per minute.
    pub idle_cpu_s_per_min: f64,
    /// The gateway's peak resident memory, bytes.
    pub gateway_peak_rss: u64,
    /// Its child processes' resident memory together, bytes: the local
    /// `tmux -C` client, or one `ssh` client per host (whose `tmux -C`
    /// runs on the host).
    pub client_rss: u64,
    pub latency_p50_ms: Option<f64>,
    pub latency_p99_ms: Option<f64>,
    pub markers_printed: u64,
    pub markers_detected: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct HostsResults {
    pub hosts: usize,
    pub panes_per_host: usize,
    pub local: HostsRun,
    pub ssh: HostsRun,
}

impl HostsResults {
    /// Memory each host costs the gateway's machine: (the gateway and its
    /// ssh clients) / N, and the part of it that is ssh's: minus the same
    /// panes and servers watched locally, / N.
    pub fn bytes_per_host(&self) -> (f64, f64) {
        let ssh = (self.ssh.gateway_peak_rss + self.ssh.client_rss) as f64;
        let local = (self.local.gateway_peak_rss + self.local.client_rss) as f64;
        let n = self.hosts.max(1) as f64;
        (ssh / n, (ssh - local) / n)
    }

    /// The report printed by `clawmux bench --hosts N`.
    pub fn table(&self) -> String {
        let ms = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.1}"));
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}x", a / b),
            _ => "-".into(),
        };
        let mib = |b: u64| b as f64 / 1024.0 / 1024.0;
        let mut out = format!(
            "{} hosts over ssh to loopback sshds, one tmux server and {} marker panes each ({} panes); baseline: the same servers and panes watched locally\n",
            self.hosts,
            self.panes_per_host,
            self.hosts * self.panes_per_host
        );
        out.push_str(&format!(
            "{:<34} {:>12} {:>12} {:>8}\n",
            "", "local", "ssh", "ssh/local"
        ));
        let rows = [
            (
                "idle CPU, gateway+ssh (s/min)",
                format!("{:.3}", self.local.idle_cpu_s_per_min),
                format!("{:.3}", self.ssh.idle_cpu_s_per_min),
                ratio(
                    Some(self.ssh.idle_cpu_s_per_min),
                    Some(self.local.idle_cpu_s_per_min),
                ),
            ),
            (
                "gateway peak RSS (MiB)",
                format!("{:.1}", mib(self.local.gateway_peak_rss)),
                format!("{:.1}", mib(self.ssh.gateway_peak_rss)),
                ratio(
                    Some(self.ssh.gateway_peak_rss as f64),
                    Some(self.local.gateway_peak_rss as f64),
                ),
            ),
            (
                "tmux -C / ssh clients RSS (MiB)",
                format!("{:.1}", mib(self.local.client_rss)),
                format!("{:.1}", mib(self.ssh.client_rss)),
                ratio(
                    Some(self.ssh.client_rss as f64),
                    Some(self.local.client_rss as f64),
                ),
            ),
            (
                "detection latency p50 (ms)",
                ms(self.local.latency_p50_ms),
                ms(self.ssh.latency_p50_ms),
                ratio(self.ssh.latency_p50_ms, self.local.latency_p50_ms),
            ),
            (
                "detection latency p99 (ms)",
                ms(self.local.latency_p99_ms),
                ms(self.ssh.latency_p99_ms),
                ratio(self.ssh.latency_p99_ms, self.local.latency_p99_ms),
            ),
            (
                "markers detected/printed",
                format!(
                    "{}/{}",
                    self.local.markers_detected, self.local.markers_printed
                ),
                format!("{}/{}", self.ssh.markers_detected, self.ssh.markers_printed),
                "-".into(),
            ),
        ];
        for (name, local, ssh, ratio) in rows {
            out.push_str(&format!("{name:<34} {local:>12} {ssh:>12} {ratio:>8}\n"));
        }
        let (per_host, ssh_part) = self.bytes_per_host();
        out.push_str(&format!(
            "memory per host on the gateway's machine: {:.2} MiB (gateway + ssh clients / hosts), of which ssh over local: {:.2} MiB\n",
            per_host / 1024.0 / 1024.0,
            ssh_part / 1024.0 / 1024.0
        ));
        out
    }
}

/// Runs the local baseline and the same panes over `hosts` loopback
/// sshds in turn, [`Settings::flood_rounds`] rounds each of a share of the
/// time, so a shared machine's drifting background load weighs on both
/// alike; latencies are pooled, CPU and memory averaged.
pub fn run_hosts(settings: &Settings, hosts: usize) -> Result<HostsResults, BenchError> {
    let hosts = hosts.max(1);
    let rounds = settings.flood_rounds.max(1);
    let round = Settings {
        idle_seconds: settings.idle_seconds / f64::from(rounds),
        flood_seconds: (settings.flood_seconds / f64::from(rounds)).max(1.0),
        exe: settings.exe.clone(),
        profile: settings.profile.clone(),
        ..*settings
    };
    let (mut local, mut ssh) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        local.push(run_design(&round, hosts, false)?);
        ssh.push(run_design(&round, hosts, true)?);
    }
    Ok(HostsResults {
        hosts,
        panes_per_host: PANES_PER_HOST,
        local: pool(local),
        ssh: pool(ssh),
    })
}

/// One design's rounds as one run.
fn pool(rounds: Vec<(HostsRun, Vec<f64>)>) -> HostsRun {
    let n = rounds.len().max(1);
    let mean =
        |f: &dyn Fn(&HostsRun) -> f64| rounds.iter().map(|(r, _)| f(r)).sum::<f64>() / n as f64;
    let mut latencies: Vec<f64> = rounds.iter().flat_map(|(_, l)| l.iter().copied()).collect();
    latencies.sort_by(f64::total_cmp);
    HostsRun {
        idle_cpu_s_per_min: mean(&|r| r.idle_cpu_s_per_min),
        gateway_peak_rss: mean(&|r| r.gateway_peak_rss as f64) as u64,
        client_rss: mean(&|r| r.client_rss as f64) as u64,
        latency_p50_ms: percentile(&latencies, 0.50),
        latency_p99_ms: percentile(&latencies, 0.99),
        markers_printed: rounds.iter().map(|(r, _)| r.markers_printed).sum(),
        markers_detected: latencies.len(),
    }
}

/// One design: `hosts` tmux servers of [`PANES_PER_HOST`] marker panes,
/// watched directly (`over_ssh` false) or each behind its own sshd.
fn run_design(
    settings: &Settings,
    hosts: usize,
    over_ssh: bool,
) -> Result<(HostsRun, Vec<f64>), BenchError> {
    let dir = ReportDir::new()?;
    let exe = shell_quote(&settings.exe.to_string_lossy());
    let seconds = settings.flood_seconds.to_string();
    let marker = |name: &str| {
        let report = shell_quote(&dir.file(name).to_string_lossy());
        format!("exec {exe} marker --seconds {seconds} --report {report}")
    };
    // The same shape both ways: one tmux server per host, so the ratio is
    // what ssh costs, not what spreading panes over servers gains.
    let groups: Vec<Vec<(String, String)>> = (0..hosts)
        .map(|h| {
            (0..PANES_PER_HOST)
                .map(|p| {
                    let name = format!("h{h}p{p}");
                    (name.clone(), marker(&name))
                })
                .collect()
        })
        .collect();
    let tag = if over_ssh { "hosts-ssh" } else { "hosts-local" };
    let servers = groups
        .iter()
        .map(|sessions| BenchServer::start(tag, sessions, PANE_SIZE))
        .collect::<Result<Vec<_>, _>>()?;
    let sshds = if over_ssh {
        (0..hosts)
            .map(|_| LoopbackSshd::start())
            .collect::<Result<Vec<_>, _>>()?
    } else {
        Vec::new()
    };
    let args: Vec<ServerArg> = servers
        .iter()
        .enumerate()
        .map(|(i, server)| ServerArg {
            command: sshds
                .get(i)
                .map_or_else(|| vec!["tmux".to_string()], LoopbackSshd::ssh_tmux),
            socket: server.socket.clone(),
        })
        .collect();
    let servers_file = dir.file("servers");
    let json = serde_json::to_vec(&args).map_err(|e| BenchError::Role(e.to_string()))?;
    std::fs::write(&servers_file, json).map_err(|e| BenchError::io("writing servers", e))?;
    let file = servers_file.to_string_lossy();
    let mut watcher = Helper::spawn(
        settings,
        &[
            "hosts-watcher",
            "--servers",
            &file,
            "--profile",
            &settings.profile,
        ],
    )?;
    watcher.wait_ready()?;

    // Idle: the markers wait for Enter.
    let (cpu0, t0) = (tree_cpu(watcher.pid())?, Instant::now());
    std::thread::sleep(Duration::from_secs_f64(settings.idle_seconds));
    let idle_cpu_s_per_min = (tree_cpu(watcher.pid())? - cpu0) * 60.0 / t0.elapsed().as_secs_f64();
    let client_rss = children(watcher.pid())
        .into_iter()
        .filter_map(|pid| rss(pid).ok())
        .sum();

    for (server, sessions) in servers.iter().zip(&groups) {
        server.press_enter(sessions)?;
    }
    std::thread::sleep(Duration::from_secs_f64(settings.flood_seconds));
    let names: Vec<&String> = groups.iter().flatten().map(|(n, _)| n).collect();
    let deadline = Instant::now() + REPORT_GRACE;
    while !names.iter().all(|n| dir.file(n).exists()) {
        if Instant::now() > deadline {
            return Err(BenchError::Role("markers did not report in time".into()));
        }
        std::thread::sleep(REPORT_POLL);
    }
    let gateway_peak_rss = peak_rss(watcher.pid())?;
    let report: WatcherReport = serde_json::from_str(&watcher.finish()?)
        .map_err(|e| BenchError::Role(format!("bad watcher report: {e}")))?;
    let mut printed = 0;
    for name in &names {
        let r: MarkerReport = read_report(&dir.file(name))?;
        printed += r.printed;
    }
    let mut latencies = report.marker_latencies_ms;
    latencies.sort_by(f64::total_cmp);
    let run = HostsRun {
        idle_cpu_s_per_min,
        gateway_peak_rss,
        client_rss,
        latency_p50_ms: percentile(&latencies, 0.50),
        latency_p99_ms: percentile(&latencies, 0.99),
        markers_printed: printed,
        markers_detected: latencies.len(),
    };
    Ok((run, latencies))
}

fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len().max(1));
    sorted.get(rank - 1).copied()
}

/// Reads the servers file the bench gives the hosts watcher.
pub fn read_servers(path: &PathBuf) -> Result<Vec<ServerArg>, BenchError> {
    let text = std::fs::read(path).map_err(|e| BenchError::io("reading servers", e))?;
    serde_json::from_slice(&text).map_err(|e| BenchError::Role(format!("bad servers file: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_rank_up() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 0.5), Some(2.0));
        assert_eq!(percentile(&v, 0.99), Some(4.0));
        assert_eq!(percentile(&[], 0.5), None);
    }
}
