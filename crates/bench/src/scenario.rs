//! The bench's runs: idle cost of clawmux against the polling design, and
//! floods with and without clawmux attached. Each run gets its own tmux
//! server; helper roles are this same program (`clawmux bench <role>`).

use std::io::{BufRead, BufReader, Lines, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::BenchError;
use super::procfs::{own_cpu, peak_rss, tree_cpu};
use super::roles::{MarkerReport, PollerReport, WriterReport, read_report};
use super::server::BenchServer;
use super::watcher::WatcherReport;

/// How long writers may overrun their time before the bench gives up on
/// them: a writer blocked on a stalled pane finishes when tmux reads again.
const REPORT_GRACE: Duration = Duration::from_secs(20);
/// How often the bench looks for the writers' reports.
const REPORT_POLL: Duration = Duration::from_millis(100);
/// Pane size: the daemon's default (`[tmux] width`/`height`).
pub const PANE_SIZE: (u16, u16) = (160, 48);

/// What to run.
#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    /// This program (the roles run as `<exe> bench <role>`).
    #[serde(skip)]
    pub exe: PathBuf,
    pub idle_panes: usize,
    pub idle_seconds: f64,
    /// The polling design's interval.
    pub poll_ms: u64,
    pub flood_panes: usize,
    pub flood_seconds: f64,
    /// Each variant's flood time is cut into this many rounds, run in turn
    /// with the other variants', so a shared machine's background load
    /// drifting during the run weighs on every variant alike.
    pub flood_rounds: u32,
    /// The paced flood's total rate over all panes, bytes a second.
    pub paced_bytes_per_second: u64,
    /// Detection profile of the watcher (the daemon's default is `gsd`).
    pub profile: String,
}

impl Settings {
    /// The sizes: 50 idle panes for 60 s per design, 20 flooding
    /// panes for 30 s per variant, 10 MB/s paced.
    pub fn full(exe: PathBuf) -> Self {
        Settings {
            exe,
            idle_panes: 50,
            idle_seconds: 60.0,
            poll_ms: 500,
            flood_panes: 20,
            flood_seconds: 30.0,
            flood_rounds: 3,
            paced_bytes_per_second: 10_000_000,
            profile: "gsd".into(),
        }
    }

    /// A smoke run of a few seconds per part, same shape.
    pub fn quick(exe: PathBuf) -> Self {
        Settings {
            idle_panes: 10,
            idle_seconds: 3.0,
            flood_panes: 4,
            flood_seconds: 3.5,
            flood_rounds: 1,
            ..Settings::full(exe)
        }
    }
}

/// CPU cost of one design watching idle panes, seconds per minute.
#[derive(Debug, Clone, Serialize)]
pub struct IdleCost {
    /// The watching process and its children (`tmux -C` clients, or the
    /// `capture-pane` processes).
    pub process: f64,
    /// The tmux server.
    pub server: f64,
    /// Polling only: the mean time a round of captures really took to
    /// come round, milliseconds (more than the interval on a slow machine).
    pub poll_round_ms: Option<f64>,
}

impl IdleCost {
    pub fn total(&self) -> f64 {
        self.process + self.server
    }
}

/// One flood variant's panes, over its rounds.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FloodRun {
    /// Bytes each writer wrote, by pane.
    pub pane_bytes: Vec<u64>,
    /// Writers' mean throughput, bytes a second.
    pub pane_rate: f64,
    /// The slowest writer's throughput.
    pub slowest_pane_rate: f64,
    pub server_cpu: f64,
    pub markers_printed: u64,
}

impl FloodRun {
    /// Adds a round: bytes, CPU and markers add up, rates average over
    /// the rounds (`rounds` counts the one being added).
    fn add_round(&mut self, round: FloodRun, rounds: u32) {
        let n = f64::from(rounds.max(1));
        let mean = |sum: f64, new: f64| sum + (new - sum) / n;
        self.pane_rate = mean(self.pane_rate, round.pane_rate);
        self.slowest_pane_rate = mean(self.slowest_pane_rate, round.slowest_pane_rate);
        self.pane_bytes.resize(round.pane_bytes.len(), 0);
        for (sum, bytes) in self.pane_bytes.iter_mut().zip(round.pane_bytes) {
            *sum += bytes;
        }
        self.server_cpu += round.server_cpu;
        self.markers_printed += round.markers_printed;
    }
}

/// One flood variant: without a client, then with clawmux watching.
#[derive(Debug, Clone, Serialize)]
pub struct Flood {
    pub name: String,
    /// Per-pane pace, bytes a second (`None`: as fast as possible).
    pub pane_pace: Option<u64>,
    pub no_client: FloodRun,
    /// What streaming costs: `tmux -C` per session with its output thrown
    /// away unread by anyone (`> /dev/null`).
    pub bare_client: FloodRun,
    /// What attaching a client per session costs (the design clawmux left
    /// for its watch session): `tmux -C` per session with its pane paused
    /// at once (no output flows).
    pub paused_client: FloodRun,
    pub watched: FloodRun,
    /// The watcher process and its `tmux -C` clients, CPU seconds.
    pub watcher_cpu: f64,
    pub watcher_peak_rss: u64,
    pub watcher: WatcherReport,
    pub seconds: f64,
}

/// Everything one bench run measured.
#[derive(Debug, Clone, Serialize)]
pub struct Results {
    pub settings: Settings,
    pub idle_clawmux: IdleCost,
    pub idle_polling: IdleCost,
    pub idle_watcher: WatcherReport,
    pub floods: Vec<Flood>,
}

/// Runs every part; `progress` hears what is starting.
pub fn run_all(
    settings: &Settings,
    progress: &mut impl FnMut(&str),
) -> Result<Results, BenchError> {
    progress("idle: clawmux");
    let (idle_clawmux, idle_watcher) = idle_clawmux(settings)?;
    progress("idle: polling");
    let idle_polling = idle_polling(settings)?;
    let mut floods = Vec::new();
    let paced = settings.paced_bytes_per_second / settings.flood_panes.max(1) as u64;
    for (name, pace) in [("flood max", None), ("flood paced", Some(paced))] {
        progress(name);
        floods.push(flood(settings, name, pace)?);
    }
    Ok(Results {
        settings: settings.clone(),
        idle_clawmux,
        idle_polling,
        idle_watcher,
        floods,
    })
}

fn idle_sessions(settings: &Settings) -> Vec<(String, String)> {
    (0..settings.idle_panes)
        .map(|i| (format!("p{i}"), "sh".to_string()))
        .collect()
}

fn idle_clawmux(settings: &Settings) -> Result<(IdleCost, WatcherReport), BenchError> {
    let server = BenchServer::start("idle-clawmux", &idle_sessions(settings), PANE_SIZE)?;
    let watcher = Helper::watcher(settings, &server)?;
    let cost = idle_cost(settings, watcher.pid(), &server)?;
    let report = serde_json::from_str(&watcher.finish()?)
        .map_err(|e| BenchError::Role(format!("bad watcher report: {e}")))?;
    Ok((cost, report))
}

fn idle_polling(settings: &Settings) -> Result<IdleCost, BenchError> {
    let server = BenchServer::start("idle-polling", &idle_sessions(settings), PANE_SIZE)?;
    let interval = settings.poll_ms.to_string();
    let mut poller = Helper::spawn(
        settings,
        &["poller", "-L", &server.socket, "--interval-ms", &interval],
    )?;
    poller.wait_ready()?;
    let cost = idle_cost(settings, poller.pid(), &server)?;
    let report: PollerReport = serde_json::from_str(&poller.finish()?)
        .map_err(|e| BenchError::Role(format!("bad poller report: {e}")))?;
    Ok(IdleCost {
        poll_round_ms: Some(report.seconds * 1000.0 / f64::from(report.rounds.max(1))),
        ..cost
    })
}

/// CPU seconds per minute of `pid` (with children) and the server over the idle time.
fn idle_cost(settings: &Settings, pid: u32, server: &BenchServer) -> Result<IdleCost, BenchError> {
    let (process0, server0, t0) = (tree_cpu(pid)?, own_cpu(server.pid)?, Instant::now());
    std::thread::sleep(Duration::from_secs_f64(settings.idle_seconds));
    let (process1, server1) = (tree_cpu(pid)?, own_cpu(server.pid)?);
    let per_minute = 60.0 / t0.elapsed().as_secs_f64();
    Ok(IdleCost {
        process: (process1 - process0) * per_minute,
        server: (server1 - server0) * per_minute,
        poll_round_ms: None,
    })
}

fn flood(settings: &Settings, name: &str, pace: Option<u64>) -> Result<Flood, BenchError> {
    let rounds = settings.flood_rounds.max(1);
    let round = Settings {
        flood_seconds: settings.flood_seconds / f64::from(rounds),
        ..settings.clone()
    };
    let mut flood = Flood {
        name: name.into(),
        pane_pace: pace,
        no_client: FloodRun::default(),
        bare_client: FloodRun::default(),
        paused_client: FloodRun::default(),
        watched: FloodRun::default(),
        watcher_cpu: 0.0,
        watcher_peak_rss: 0,
        watcher: WatcherReport::default(),
        seconds: settings.flood_seconds,
    };
    for n in 1..=rounds {
        let run = flood_run(&round, pace, Attached::Nothing)?;
        flood.no_client.add_round(run, n);
        let run = flood_run(&round, pace, Attached::BareControl)?;
        flood.bare_client.add_round(run, n);
        let run = flood_run(&round, pace, Attached::PausedControl)?;
        flood.paused_client.add_round(run, n);
        let mut watched = None;
        let run = flood_run(&round, pace, Attached::Clawmux(&mut watched))?;
        flood.watched.add_round(run, n);
        let (cpu, rss, report) =
            watched.ok_or_else(|| BenchError::Role("the watcher did not report".into()))?;
        flood.watcher_cpu += cpu;
        flood.watcher_peak_rss = flood.watcher_peak_rss.max(rss);
        flood.watcher.add(report);
    }
    Ok(flood)
}

/// The watcher's CPU seconds, peak RSS and report.
type Watched = Option<(f64, u64, WatcherReport)>;

/// What is attached to the flooding server.
enum Attached<'a> {
    Nothing,
    /// One `tmux -C attach` per session writing to `/dev/null`: the
    /// fastest possible control client.
    BareControl,
    /// The same, each pausing its pane at once: attached, nothing flows.
    PausedControl,
    /// The clawmux watcher; its cost is put here.
    Clawmux(&'a mut Watched),
}

/// One flood: writers and a marker, each in its own session, with
/// `attached` watching them.
fn flood_run(
    settings: &Settings,
    pace: Option<u64>,
    attached: Attached<'_>,
) -> Result<FloodRun, BenchError> {
    let dir = ReportDir::new()?;
    let exe = shell_quote(&settings.exe.to_string_lossy());
    let seconds = settings.flood_seconds.to_string();
    let mut sessions: Vec<(String, String)> = (0..settings.flood_panes)
        .map(|i| {
            let report = shell_quote(&dir.file(&format!("p{i}")).to_string_lossy());
            let rate = pace.map(|r| format!(" --rate {r}")).unwrap_or_default();
            let cmd = format!("exec {exe} writer --seconds {seconds}{rate} --report {report}");
            (format!("p{i}"), cmd)
        })
        .collect();
    let mark_report = dir.file("mark");
    sessions.push((
        "mark".into(),
        format!(
            "exec {exe} marker --seconds {seconds} --report {}",
            shell_quote(&mark_report.to_string_lossy())
        ),
    ));
    let tag = match attached {
        Attached::Nothing => "flood-alone",
        Attached::BareControl => "flood-bare",
        Attached::PausedControl => "flood-paused",
        Attached::Clawmux(_) => "flood-clawmux",
    };
    let server = BenchServer::start(tag, &sessions, PANE_SIZE)?;
    let mut bare = Vec::new();
    let mut watcher = None;
    match attached {
        Attached::Nothing => {}
        Attached::BareControl => {
            for (name, _) in &sessions {
                bare.push(BareClient::attach(&server, name, false)?);
            }
        }
        Attached::PausedControl => {
            for (name, _) in &sessions {
                bare.push(BareClient::attach(&server, name, true)?);
            }
        }
        Attached::Clawmux(_) => watcher = Some(Helper::watcher(settings, &server)?),
    }
    let watcher_cpu0 = watcher.as_ref().map(|w| tree_cpu(w.pid())).transpose()?;
    let server_cpu0 = own_cpu(server.pid)?;
    server.press_enter(&sessions)?;
    std::thread::sleep(Duration::from_secs_f64(settings.flood_seconds));
    let deadline = Instant::now() + REPORT_GRACE;
    let reports: Vec<PathBuf> = (0..settings.flood_panes)
        .map(|i| dir.file(&format!("p{i}")))
        .chain([mark_report.clone()])
        .collect();
    while !reports.iter().all(|r| r.exists()) {
        if Instant::now() > deadline {
            return Err(BenchError::Role(format!(
                "writers did not report within {} s of the end",
                REPORT_GRACE.as_secs()
            )));
        }
        std::thread::sleep(REPORT_POLL);
    }
    let server_cpu = own_cpu(server.pid)? - server_cpu0;
    drop(bare);
    if let (Some(w), Some(cpu0), Attached::Clawmux(out)) = (watcher.take(), watcher_cpu0, attached)
    {
        let cpu = tree_cpu(w.pid())? - cpu0;
        let rss = peak_rss(w.pid())?;
        let report = serde_json::from_str(&w.finish()?)
            .map_err(|e| BenchError::Role(format!("bad watcher report: {e}")))?;
        *out = Some((cpu, rss, report));
    }
    let mut pane_bytes = Vec::new();
    let mut rates = Vec::new();
    for i in 0..settings.flood_panes {
        let r: WriterReport = read_report(&dir.file(&format!("p{i}")))?;
        pane_bytes.push(r.bytes);
        rates.push(r.bytes as f64 / r.seconds.max(f64::EPSILON));
    }
    let marker: MarkerReport = read_report(&mark_report)?;
    Ok(FloodRun {
        pane_bytes,
        pane_rate: rates.iter().sum::<f64>() / rates.len().max(1) as f64,
        slowest_pane_rate: rates.iter().copied().fold(f64::INFINITY, f64::min),
        server_cpu,
        markers_printed: marker.printed,
    })
}

/// A helper role process: stdin is its stop signal, stdout its answers.
pub(super) struct Helper {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Helper {
    pub(super) fn spawn(settings: &Settings, args: &[&str]) -> Result<Self, BenchError> {
        let mut child = Command::new(&settings.exe)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| BenchError::io(format!("starting {}", settings.exe.display()), e))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| BenchError::Role("no stdout pipe".into()))?;
        Ok(Helper {
            child,
            lines: BufReader::new(stdout).lines(),
        })
    }

    /// The clawmux watcher on `server`, attached to every session.
    fn watcher(settings: &Settings, server: &BenchServer) -> Result<Self, BenchError> {
        let args = [
            "watcher",
            "-L",
            &server.socket,
            "--profile",
            &settings.profile,
        ];
        let mut watcher = Helper::spawn(settings, &args)?;
        watcher.wait_ready()?;
        Ok(watcher)
    }

    pub(super) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the `ready` line.
    pub(super) fn wait_ready(&mut self) -> Result<(), BenchError> {
        match self.lines.next() {
            Some(Ok(line)) if line == "ready" => Ok(()),
            other => Err(BenchError::Role(format!(
                "a helper did not start: {other:?}"
            ))),
        }
    }

    /// Closes stdin (stop), returns the last line it printed.
    pub(super) fn finish(mut self) -> Result<String, BenchError> {
        drop(self.child.stdin.take());
        let mut last = String::new();
        for line in self.lines.by_ref() {
            last = line.map_err(|e| BenchError::io("reading a helper's report", e))?;
        }
        let status = self
            .child
            .wait()
            .map_err(|e| BenchError::io("waiting for a helper", e))?;
        if !status.success() {
            return Err(BenchError::Role(format!("a helper failed: {status}")));
        }
        Ok(last)
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `tmux -C attach` with stdout to `/dev/null` (tmux writes there
/// itself); detached when dropped.
struct BareClient(Child);

impl BareClient {
    /// Attaches to `session`; `paused`: pauses its pane at once.
    fn attach(server: &BenchServer, session: &str, paused: bool) -> Result<Self, BenchError> {
        let mut child = Command::new("tmux")
            .args(["-L", &server.socket, "-C", "attach-session", "-t"])
            .arg(format!("={session}"))
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| BenchError::io("starting tmux -C", e))?;
        if paused {
            let pane = server.ok(&[
                "display-message",
                "-p",
                "-t",
                &format!("={session}:"),
                "#{pane_id}",
            ])?;
            let line = format!("refresh-client -A '{}:pause'\n", pane.trim());
            if let Some(stdin) = child.stdin.as_mut() {
                stdin
                    .write_all(line.as_bytes())
                    .map_err(|e| BenchError::io("pausing a pane", e))?;
            }
        }
        Ok(BareClient(child))
    }
}

impl Drop for BareClient {
    fn drop(&mut self) {
        // Closing stdin detaches the client.
        drop(self.0.stdin.take());
        let _ = self.0.wait();
    }
}

/// A temporary directory for the roles' reports, removed when dropped.
pub(super) struct ReportDir(PathBuf);

impl ReportDir {
    pub(super) fn new() -> Result<Self, BenchError> {
        let n = rand::random::<u64>();
        let dir = std::env::temp_dir().join(format!("clawmux-bench-{}-{n:x}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| BenchError::io(format!("creating {}", dir.display()), e))?;
        Ok(ReportDir(dir))
    }

    pub(super) fn file(&self, name: &str) -> PathBuf {
        self.0.join(format!("{name}.json"))
    }
}

impl Drop for ReportDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `arg` as one shell word (tmux runs pane commands with `sh -c`; a NUL
/// is kept for tmux to refuse).
pub(super) fn shell_quote(arg: &str) -> String {
    clawmux::shell::quote_keeping_nul(arg).into_owned()
}
