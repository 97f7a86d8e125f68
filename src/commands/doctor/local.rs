//! The checks `clawmux doctor` runs on this machine alone: tmux, fonts,
//! the state and config directories, the configured agents and Claude
//! Code's hooks. Each gives a [`Finding`] with its fix; none stops the others.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use clawmux::agents::{self, Choice};
use clawmux::bridge::config::Config;
use clawmux::render::fonts::{self, CJK_PACKAGE, Fonts, Lookup, SYMBOL_PACKAGE};
use tokio::time::Duration;

use super::Finding;

/// The tmux release clawmux is tested with.
pub const TMUX_TESTED: &str = "3.3a";
/// Longest a `--version` run may take before it counts as broken (a
/// Node agent starts in about a second).
const VERSION_TIMEOUT: Duration = Duration::from_secs(15);

/// Characters the pictures need beyond the monospace font, by range, with
/// the Debian package that brings them.
const GLYPH_RANGES: &[(&str, &[char], &str)] = &[
    ("CJK ideographs U+4E00–U+9FFF", &['中', '文'], CJK_PACKAGE),
    (
        "technical symbols U+2300–U+23FF (Claude Code's ⎿)",
        &['⎿'],
        SYMBOL_PACKAGE,
    ),
    ("dingbats U+2700–U+27BF (✻ ✽)", &['✻', '✽'], SYMBOL_PACKAGE),
    ("emoji U+1F300–U+1FAFF", &['😀', '🚀'], SYMBOL_PACKAGE),
];

pub async fn check(config_path: Option<&Path>) -> Vec<Finding> {
    let mut found = Vec::new();
    let state = clawmux::store::state_dir();
    found.push(state_dir(&state));
    let (config, finding) = config(config_path, &state);
    found.push(finding);
    let config = config.unwrap_or_default();
    found.push(tmux(&config.tmux.command).await);
    found.extend(fonts_found(&config.screen.fonts));
    found.extend(agents_found(&config).await);
    found
}

fn state_dir(dir: &Path) -> Finding {
    const CHECK: &str = "state-dir";
    let meta = match std::fs::metadata(dir) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Finding::ok(
                CHECK,
                format!(
                    "{} does not exist yet; serve creates it (0700)",
                    dir.display()
                ),
            );
        }
        Err(e) => {
            return Finding::error(
                CHECK,
                format!("cannot read {}: {e}", dir.display()),
                "set CLAWMUX_HOME to a directory this user owns",
            );
        }
    };
    if !meta.is_dir() {
        return Finding::error(
            CHECK,
            format!("{} is not a directory", dir.display()),
            "move it away or set CLAWMUX_HOME to another directory",
        );
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Finding::warn(
            CHECK,
            format!(
                "{} is mode {mode:04o}: other users can read the event log and hook tokens",
                dir.display()
            ),
            format!("chmod 700 {}", dir.display()),
        );
    }
    let probe = dir.join(format!(".doctor-{}", std::process::id()));
    match std::fs::write(&probe, b"") {
        Ok(()) => {
            let _ = std::fs::remove_file(&probe);
            Finding::ok(
                CHECK,
                format!("{} (mode {mode:04o}, writable)", dir.display()),
            )
        }
        Err(e) => Finding::error(
            CHECK,
            format!("cannot write in {}: {e}", dir.display()),
            format!("chown it to this user and chmod 700 {}", dir.display()),
        ),
    }
}

fn config(path: Option<&Path>, state: &Path) -> (Option<Config>, Finding) {
    const CHECK: &str = "config";
    let path: Option<PathBuf> = path
        .map(Path::to_path_buf)
        .or_else(|| super::super::serve::default_config_path(state));
    let Some(path) = path else {
        return (
            None,
            Finding::ok(
                CHECK,
                "no config file: the defaults are used (write ~/.config/clawmux/config.toml, or $CLAWMUX_HOME/config.toml, to change them)",
            ),
        );
    };
    match Config::load(Some(&path)) {
        Ok(c) => (
            Some(c),
            Finding::ok(CHECK, format!("{} read", path.display())),
        ),
        Err(e) => (
            None,
            Finding::error(
                CHECK,
                format!("{}: {e}", path.display()),
                "correct the file as the message says (the other checks used the defaults)",
            ),
        ),
    }
}

/// Why a program's output could not be had.
#[derive(Debug, thiserror::Error)]
enum RunError {
    #[error("`{command}` gave no answer in {} s", VERSION_TIMEOUT.as_secs())]
    Silent { command: String },
    #[error("cannot run `{program}`: {source}")]
    Start {
        program: String,
        #[source]
        source: std::io::Error,
    },
}

/// Runs `program args`, its stdout and stderr joined, or why not.
async fn output(program: &str, args: &[&str]) -> Result<String, RunError> {
    let run = tokio::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(VERSION_TIMEOUT, run).await {
        Err(_) => Err(RunError::Silent {
            command: format!("{program} {}", args.join(" ")),
        }),
        Ok(Err(source)) => Err(RunError::Start {
            program: program.to_owned(),
            source,
        }),
        Ok(Ok(out)) => Ok(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )),
    }
}

/// tmux's version, run through the config's command prefix (`ssh host
/// tmux` asks the remote tmux).
async fn tmux(command: &[String]) -> Finding {
    const CHECK: &str = "tmux";
    let Some((program, prefix)) = command.split_first() else {
        return Finding::error(
            CHECK,
            "[tmux] command is empty",
            "remove it from the config (the default is [\"tmux\"])",
        );
    };
    let mut argv: Vec<&str> = prefix.iter().map(String::as_str).collect();
    argv.push("-V");
    let text = match output(program, &argv).await {
        Ok(t) => t,
        Err(e) => {
            return Finding::error(
                CHECK,
                format!("tmux is not usable: {e}"),
                "install it, e.g. `sudo apt-get install tmux` (clawmux runs agents in tmux)",
            );
        }
    };
    let version = text.split_whitespace().nth(1).unwrap_or("").to_owned();
    if version == TMUX_TESTED {
        Finding::ok(CHECK, format!("tmux {version} (the release tested)"))
    } else {
        Finding::warn(
            CHECK,
            format!(
                "tmux {} is not the release tested ({TMUX_TESTED})",
                if version.is_empty() {
                    text.trim()
                } else {
                    &version
                }
            ),
            format!("if panes misbehave, try tmux {TMUX_TESTED}"),
        )
    }
}

const FONTS: &str = "fonts";

fn fonts_found(paths: &fonts::FontPaths) -> Vec<Finding> {
    match Fonts::discover(paths) {
        Ok(f) => glyph_findings(&f),
        Err(e) => vec![Finding::warn(
            FONTS,
            format!("{e}; /gsd:screen sends text without a picture"),
            format!("sudo apt-get install {}", fonts::MONO_PACKAGE),
        )],
    }
}

/// The monospace font found, and each range of [`GLYPH_RANGES`] no font has.
fn glyph_findings(fonts: &Fonts) -> Vec<Finding> {
    const CHECK: &str = FONTS;
    let mut found = vec![Finding::ok(
        CHECK,
        format!(
            "monospace font {}",
            fonts
                .paths()
                .first()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        ),
    )];
    for (range, samples, package) in GLYPH_RANGES {
        let missing: String = samples
            .iter()
            .filter(|c| matches!(fonts.glyph(**c), Lookup::Missing))
            .collect();
        if !missing.is_empty() {
            found.push(Finding::warn(
                CHECK,
                format!("no font has {range}: {missing} are drawn as boxes in pictures"),
                format!("sudo apt-get install {package}"),
            ));
        }
    }
    found
}

/// The agents the config names: `[agent]` and each project's.
fn configured(config: &Config) -> Vec<&str> {
    let mut names = vec![config.agent.command.as_str()];
    for p in config.projects.values() {
        if let Some(a) = p.agent.as_deref()
            && !names.contains(&a)
        {
            names.push(a);
        }
    }
    names
}

async fn agents_found(config: &Config) -> Vec<Finding> {
    let mut found = Vec::new();
    for setting in configured(config) {
        let agent = match Choice::of(setting) {
            Choice::Sim => {
                found.push(Finding::ok("agent", "the built-in simulated agent"));
                continue;
            }
            choice => choice.agent(),
        };
        let Some(agent) = agent else {
            found.push(Finding::warn(
                "agent",
                format!("`{setting}` is no agent clawmux knows; it runs as a command with the `shell` profile"),
                format!("use one of {}", agents::names()),
            ));
            continue;
        };
        found.push(agent_version(agent).await);
        if let Some(finding) = hooks(agent) {
            found.push(finding);
        }
    }
    found
}

async fn agent_version(agent: &'static agents::Agent) -> Finding {
    const CHECK: &str = "agent";
    let text = match output(agent.program, &["--version"]).await {
        Ok(t) => t,
        Err(e) => {
            return Finding::error(
                CHECK,
                format!("{} is not installed: {e}", agent.title),
                format!(
                    "install {} (release {} tested), or set `[agent] command = \"sim\"` to try the simulated agent",
                    agent.package, agent.tested
                ),
            );
        }
    };
    let version = version_in(&text);
    match version {
        Some(v) if tested(agent).contains(&v) => {
            Finding::ok(CHECK, format!("{} {v} (a release tested)", agent.title))
        }
        Some(v) if older(v, oldest(agent)) => Finding::warn(
            CHECK,
            format!(
                "{} {v} is older than the oldest release supported ({})",
                agent.title,
                oldest(agent)
            ),
            format!("update it: install {} {}", agent.package, agent.tested),
        ),
        Some(v) => Finding::warn(
            CHECK,
            format!(
                "{} {v} is not the release tested ({})",
                agent.title, agent.tested
            ),
            format!(
                "run `clawmux doctor --agent` to check detection with it, or install {} {}",
                agent.package, agent.tested
            ),
        ),
        None => Finding::warn(
            CHECK,
            format!(
                "{} said no version: {:?}",
                agent.title,
                text.trim().chars().take(80).collect::<String>()
            ),
            format!("reinstall {}", agent.package),
        ),
    }
}

/// The releases of `agent` the tests ran against.
fn tested(agent: &'static agents::Agent) -> &'static [&'static str] {
    if agent.name == agents::claude::AGENT.name {
        &agents::claude::TESTED_VERSIONS
    } else {
        std::slice::from_ref(&agent.tested)
    }
}

/// The oldest release of `agent` clawmux supports.
fn oldest(agent: &agents::Agent) -> &'static str {
    if agent.name == agents::claude::AGENT.name {
        agents::claude::OLDEST_SUPPORTED
    } else {
        agent.tested
    }
}

/// Whether release `a` is older than `b`, comparing dotted numbers.
fn older(a: &str, b: &str) -> bool {
    let parts = |v: &str| -> Vec<u64> { v.split('.').map(|p| p.parse().unwrap_or(0)).collect() };
    parts(a) < parts(b)
}

/// The first `N.N[.N…]` word in `text`.
fn version_in(text: &str) -> Option<&str> {
    text.split(|c: char| c.is_whitespace() || c == ',' || c == '(' || c == ')')
        .map(|w| w.trim_start_matches('v'))
        .find(|w| {
            w.split('.').count() >= 2
                && w.split('.')
                    .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
        })
}

/// Where `clawmux hooks install --write` puts `agent`'s hooks (see
/// `clawmux hooks install --help`), and the `--agent` value; `None` for an
/// agent without hooks (Aider's notifications command is on its command line).
fn hook_places(agent: &agents::Agent) -> Option<(Vec<PathBuf>, &'static str)> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let under_home = |rel: &str| home.iter().map(|h| h.join(rel)).collect::<Vec<_>>();
    match agent.name {
        "claude" => {
            let mut places = vec![PathBuf::from(".claude/settings.json")];
            places.extend(under_home(".claude/settings.json"));
            Some((places, "claude --write --dir <project directory>"))
        }
        "codex" => {
            let codex_home = std::env::var_os("CODEX_HOME")
                .map(PathBuf::from)
                .or_else(|| home.as_ref().map(|h| h.join(".codex")));
            Some((
                codex_home
                    .map(|d| d.join("hooks.json"))
                    .into_iter()
                    .collect(),
                "codex --write",
            ))
        }
        "gemini" => Some((under_home(".gemini/settings.json"), "gemini --write")),
        "opencode" => {
            let config = std::env::var_os("XDG_CONFIG_HOME")
                .map(PathBuf::from)
                .or_else(|| home.as_ref().map(|h| h.join(".config")));
            Some((
                config
                    .map(|d| d.join("opencode/plugin/clawmux.js"))
                    .into_iter()
                    .collect(),
                "opencode --write",
            ))
        }
        _ => None,
    }
}

/// Whether `agent`'s hooks run clawmux, in one of the places they are
/// written, for every event clawmux installs (an install by an older
/// release lacks the events added since).
fn hooks(agent: &agents::Agent) -> Option<Finding> {
    const CHECK: &str = "hooks";
    let (places, install) = hook_places(agent)?;
    for place in &places {
        if let Ok(text) = std::fs::read_to_string(place)
            && text.contains("clawmux")
            && text.contains("hook")
        {
            let missing = missing_hooks(agent.name, &text);
            if !missing.is_empty() {
                return Some(Finding::warn(
                    CHECK,
                    format!(
                        "{}: clawmux hooks in {} lack {}",
                        agent.title,
                        place.display(),
                        missing.join(", ")
                    ),
                    format!("clawmux hooks install --agent {install}"),
                ));
            }
            return Some(Finding::ok(
                CHECK,
                format!("{}: clawmux hooks in {}", agent.title, place.display()),
            ));
        }
    }
    let looked: Vec<String> = places.iter().map(|p| p.display().to_string()).collect();
    Some(Finding::warn(
        CHECK,
        format!(
            "{}: no clawmux hooks in {}: approvals and completions are read off the screen only",
            agent.title,
            looked.join(" or ")
        ),
        format!("clawmux hooks install --agent {install}"),
    ))
}

/// The events clawmux installs for agent `name` that the settings `text`
/// (JSON) has no clawmux hook for; none for an agent whose hooks are not
/// such a file (OpenCode's plugin).
fn missing_hooks(name: &str, text: &str) -> Vec<&'static str> {
    use clawmux::hooks::settings::{self, Agent};
    let agent = match name {
        "claude" => Agent::Claude,
        "codex" => Agent::Codex,
        "gemini" => Agent::Gemini,
        _ => return Vec::new(),
    };
    let Ok(mut parsed) = serde_json::from_str::<serde_json::Value>(text) else {
        return Vec::new();
    };
    // A merge into a copy says what it would add; the file is not touched.
    (settings::merge_into_for(agent, &mut parsed, &settings::hook_command(None)))
        .map(|report| report.added)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gemini hooks installed by a release before `BeforeTool` was added
    /// lack it; a whole install lacks nothing.
    #[test]
    fn an_install_by_an_older_release_lacks_the_events_added_since() {
        let old = r#"{"hooks":{"AfterAgent":[{"hooks":[{"type":"command","command":"clawmux hook"}]}],"Notification":[{"hooks":[{"type":"command","command":"clawmux hook"}]}]}}"#;
        assert_eq!(missing_hooks("gemini", old), ["BeforeTool"]);
        let whole = clawmux::hooks::settings::hooks_config_for(
            clawmux::hooks::settings::Agent::Gemini,
            "/usr/bin/clawmux hook",
        );
        assert!(missing_hooks("gemini", &whole.to_string()).is_empty());
        assert!(missing_hooks("opencode", "export const x = 1").is_empty());
    }

    #[test]
    fn version_in_finds_the_release() {
        assert_eq!(version_in("2.1.332 (Claude Code)"), Some("2.1.332"));
        assert_eq!(version_in("codex-cli 0.171.0"), Some("0.171.0"));
        assert_eq!(version_in("aider v0.86.2"), Some("0.86.2"));
        assert_eq!(version_in("no version here 3."), None);
    }

    /// With only DejaVu Sans Mono (fonts-dejavu-core's), the CJK and
    /// symbol ranges are named with their packages.
    #[test]
    fn missing_glyph_ranges_are_named_with_their_package() {
        let mono = PathBuf::from("/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf");
        if !mono.is_file() {
            return;
        }
        let paths = fonts::FontPaths {
            mono: Some(mono),
            ..Default::default()
        };
        let Ok(only) = Fonts::discover_in(&paths, &[], false) else {
            panic!("DejaVu Sans Mono does not load");
        };
        let found = glyph_findings(&only);
        assert!(found[0].ok && found[0].detail.contains("DejaVuSansMono.ttf"));
        let warned = |range: &str, package: &str| {
            found.iter().any(|f| {
                !f.ok
                    && f.detail.contains(range)
                    && f.fix == format!("sudo apt-get install {package}")
            })
        };
        assert!(
            warned("CJK ideographs U+4E00–U+9FFF", CJK_PACKAGE),
            "{found:?}"
        );
        assert!(warned("Claude Code's ⎿", SYMBOL_PACKAGE), "{found:?}");
        assert!(warned("emoji", SYMBOL_PACKAGE), "{found:?}");
    }

    #[test]
    fn releases_compare_by_number() {
        assert!(older("2.1.99", "2.1.197"));
        assert!(!older("2.1.332", "2.1.197"));
        assert!(!older("0.171.0", "0.171.0"));
        let claude = &agents::claude::AGENT;
        assert!(tested(claude).contains(&agents::claude::OLDEST_SUPPORTED));
        assert!(tested(claude).contains(&agents::claude::NEWEST_TESTED));
    }
}
