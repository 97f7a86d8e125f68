//! GSD's files where a project runs: which commands its install has
//! ([`crate::spelling`]) and its planning files ([`crate::planning`]). A project on this machine is read from the
//! file system here; a project behind a remote shell (`ssh … box tmux`) is
//! read on its host by one short `sh` script, run the way its tmux is run
//! (the host's command, with `sh -c SCRIPT` in place of its last word,
//! `tmux`) through [`one_shot::run`]: within the host's timeout, and with
//! output the script itself bounds (`head`) under the one-shot cap.
//!
//! Why not through tmux (`run-shell`): tmux 3.3a does not hand a
//! command-line client the output of `run-shell`, only its exit status.
//! A host whose command does not end in a `tmux` program cannot be asked
//! ([`HostFilesError::NoShell`]): its commands are typed as sent and its
//! planning position is not shown.

use std::path::{Path, PathBuf};
use std::time::Duration;

use clawmux_text::shell;
use clawmux_tmux::one_shot::{self, OneShotError, SSH_FAILED};

use crate::planning::{MAX_PLANNING_BYTES, Planning, PlanningError};
use crate::spelling::{self, Install, MAX_LISTING_ENTRIES};

/// Where a project's files are and how to reach them: the project's
/// workspace and agent, on this machine or on the host its tmux runs on.
#[derive(Debug, Clone)]
pub struct ProjectHost {
    /// The host's tmux command (`["tmux"]`, `["ssh", "box", "tmux"]`); a
    /// script for a remote host runs in place of its last word.
    pub program: Vec<String>,
    /// Whether `program` hands its arguments to a remote shell (`ssh`).
    pub remote_shell: bool,
    /// The host's name, for messages (`local` for this machine).
    pub name: String,
    /// How long the host has to answer one script (connecting included).
    pub timeout: Duration,
    pub workspace: PathBuf,
    /// The agent's command line (read for its `HOME` and `CODEX_HOME`).
    pub agent_command: String,
    /// Which agent it starts (`claude`, `codex`, `gemini`, …), if known:
    /// each keeps its GSD commands in its own folders.
    pub agent: Option<&'static str>,
}

/// The listings of a GSD install on a host: the agent HOME's skills
/// (`$2`, else the login's `$HOME`), the workspace's (`$1`) skills and its
/// `commands/gsd/`, each after a marker line (`$3` and the section's name)
/// and cut at `$4` names. One line: a remote login shell that is not a
/// POSIX one (csh) refuses a quoted newline.
const LIST_SCRIPT: &str = "h=${2:-$HOME}; \
printf '%s home\\n' \"$3\"; ls -1 -- \"$h/.claude/skills\" 2>/dev/null | head -n \"$4\"; \
cd -- \"$1\" 2>/dev/null || exit 0; \
printf '%s project\\n' \"$3\"; ls -1 .claude/skills 2>/dev/null | head -n \"$4\"; \
printf '%s commands\\n' \"$3\"; ls -1 .claude/commands/gsd 2>/dev/null | head -n \"$4\"; exit 0";

/// The planning files of the workspace `$1`, each after a marker line
/// (`$2` and its name), cut at `$3` bytes (one past the bound, so a file
/// over it is known as such), and followed by one newline of the script's.
const PLANNING_SCRIPT: &str = "cd -- \"$1\" 2>/dev/null || exit 0; \
for f in STATE.md ROADMAP.md; do [ -f \".planning/$f\" ] || continue; \
printf '%s %s\\n' \"$2\" \"$f\"; head -c \"$3\" \".planning/$f\"; printf '\\n'; done; exit 0";

/// Why a host's files could not be read.
#[derive(Debug, thiserror::Error)]
pub enum HostFilesError {
    #[error("host {0}: its command does not end in `tmux`, so its files cannot be read")]
    NoShell(String),
    #[error("host {host}: {message}")]
    Failed { host: String, message: String },
    #[error(transparent)]
    Planning(#[from] PlanningError),
}

/// The GSD install the project's pane sees: here for a local pane
/// ([`probe`]), on its host for a remote one.
pub async fn install(spec: &ProjectHost) -> Result<Install, HostFilesError> {
    if !spec.remote_shell {
        let local = spec.clone();
        return tokio::task::spawn_blocking(move || probe(&local))
            .await
            .map_err(|e| failed(&spec.name, e.to_string()));
    }
    let nonce = nonce();
    let home = spelling::agent_home(&spec.agent_command, None)
        .map(|h| h.to_string_lossy().into_owned())
        .unwrap_or_default();
    let workspace = spec.workspace.to_string_lossy();
    let max = MAX_LISTING_ENTRIES.to_string();
    let out = run(spec, LIST_SCRIPT, &[&workspace, &home, &nonce, &max]).await?;
    Ok(parse_listings(&out, &nonce))
}

/// What the project's planning files say (`None`: it has none yet): read
/// here for a local pane, on its host for a remote one.
pub async fn planning(spec: &ProjectHost) -> Result<Option<Planning>, HostFilesError> {
    if !spec.remote_shell {
        let workspace = spec.workspace.clone();
        return tokio::task::spawn_blocking(move || Planning::read_local(&workspace))
            .await
            .map_err(|e| failed(&spec.name, e.to_string()))?
            .map_err(HostFilesError::from);
    }
    let nonce = nonce();
    let workspace = spec.workspace.to_string_lossy();
    let limit = (MAX_PLANNING_BYTES + 1).to_string();
    let out = run(spec, PLANNING_SCRIPT, &[&workspace, &nonce, &limit]).await?;
    parse_planning(&out, &nonce, &spec.workspace)
}

fn failed(host: &str, message: String) -> HostFilesError {
    HostFilesError::Failed {
        host: host.to_string(),
        message,
    }
}

/// A marker no file holds: random, per call.
fn nonce() -> String {
    format!("clawmux-{}", uuid::Uuid::new_v4().simple())
}

/// Runs `script` on the spec's host; its output.
async fn run(spec: &ProjectHost, script: &str, args: &[&str]) -> Result<Vec<u8>, HostFilesError> {
    let host = spec.name.as_str();
    let cmd = one_shot::host_shell(&spec.program, spec.remote_shell, script, args)
        .map_err(|e| failed(host, e.to_string()))?
        .ok_or_else(|| HostFilesError::NoShell(host.to_string()))?;
    let out = match one_shot::run(cmd, spec.timeout).await {
        Ok(out) => out,
        Err(OneShotError::Spawn(e)) => return Err(failed(host, format!("cannot run: {e}"))),
        Err(e) => return Err(failed(host, e.to_string())),
    };
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr).trim().to_string();
        let message = match out.status.code() {
            Some(SSH_FAILED) => format!("unreachable: {stderr}"),
            _ => format!("the shell failed ({}): {stderr}", out.status),
        };
        return Err(failed(host, message));
    }
    Ok(out.stdout)
}

/// `(name, body)` of each section of `out`: a line `NONCE NAME`, then the
/// body up to the next such line.
fn sections<'a>(out: &'a [u8], nonce: &str) -> Vec<(&'a [u8], &'a [u8])> {
    let marker = format!("{nonce} ");
    let marker = marker.as_bytes();
    let mut starts = Vec::new();
    let mut at = 0;
    while let Some(i) = find(&out[at..], marker) {
        let start = at + i;
        // Only at the start of a line: the script prints each marker on
        // its own line.
        if start == 0 || out[start - 1] == b'\n' {
            starts.push(start);
        }
        at = start + marker.len();
    }
    let mut found = Vec::with_capacity(starts.len());
    for (k, &start) in starts.iter().enumerate() {
        let end = starts.get(k + 1).copied().unwrap_or(out.len());
        let section = &out[start + marker.len()..end];
        let (name, body) = match section.iter().position(|&b| b == b'\n') {
            Some(nl) => (&section[..nl], &section[nl + 1..]),
            None => (section, &[][..]),
        };
        found.push((name, body));
    }
    found
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The install from [`LIST_SCRIPT`]'s output.
fn parse_listings(out: &[u8], nonce: &str) -> Install {
    let mut skills = Vec::new();
    let mut commands = Vec::new();
    for (name, body) in sections(out, nonce) {
        let names = String::from_utf8_lossy(body);
        let names = names.lines().take(MAX_LISTING_ENTRIES).map(str::to_string);
        match name {
            b"home" | b"project" => skills.extend(names),
            b"commands" => commands.extend(names),
            _ => {}
        }
    }
    Install::from_listings(
        skills.iter().map(String::as_str),
        commands.iter().map(String::as_str),
    )
}

/// The planning position from [`PLANNING_SCRIPT`]'s output.
fn parse_planning(
    out: &[u8],
    nonce: &str,
    workspace: &Path,
) -> Result<Option<Planning>, HostFilesError> {
    let mut state = None;
    let mut roadmap = None;
    for (name, body) in sections(out, nonce) {
        // The script's own newline after the file.
        let body = body.strip_suffix(b"\n").unwrap_or(body);
        let slot = match name {
            b"STATE.md" => &mut state,
            b"ROADMAP.md" => &mut roadmap,
            _ => continue,
        };
        if body.len() as u64 > MAX_PLANNING_BYTES {
            let path: PathBuf = workspace
                .join(".planning")
                .join(String::from_utf8_lossy(name).as_ref());
            return Err(PlanningError::TooLarge {
                path: path.display().to_string(),
            }
            .into());
        }
        *slot = Some(String::from_utf8_lossy(body).into_owned());
    }
    Ok(state.map(|s| Planning::parse(&s, roadmap.as_deref())))
}

/// The install a project's pane sees. A pane on this machine is probed
/// here (its agent HOME from its command line, else the daemon's HOME);
/// for a pane behind a remote shell the files are on its host, read there
/// by [`install`]: none here.
pub fn probe(spec: &ProjectHost) -> Install {
    if spec.remote_shell {
        return Install::default();
    }
    let home = spelling::agent_home(
        &spec.agent_command,
        std::env::var_os("HOME").map(PathBuf::from),
    );
    match spec.agent {
        Some("gemini") => spelling::probe_gemini(&spec.workspace, home.as_deref()),
        Some("codex") => {
            let codex_home = shell::env_assignment(&spec.agent_command, "CODEX_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("CODEX_HOME").map(PathBuf::from))
                .or_else(|| home.map(|h| h.join(".codex")));
            spelling::probe_codex(codex_home.as_deref())
        }
        _ => spelling::probe_local(&spec.workspace, home.as_deref()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spelling::Spelling;

    #[test]
    fn probing_finds_the_install_of_the_agent_the_pane_runs() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".gemini/commands/gsd")).unwrap();
        std::fs::write(home.path().join(".gemini/commands/gsd/progress.toml"), "x").unwrap();
        std::fs::create_dir_all(home.path().join("cx/skills/gsd-ship")).unwrap();
        std::fs::create_dir_all(home.path().join(".claude/skills/gsd-ship")).unwrap();
        let spec = |agent: &'static str, agent_command: String| ProjectHost {
            program: vec!["tmux".into()],
            remote_shell: false,
            name: "local".into(),
            timeout: std::time::Duration::from_secs(1),
            workspace: ws.path().to_path_buf(),
            agent_command,
            agent: Some(agent),
        };
        let h = home.path().display();
        let gemini = probe(&spec(
            "gemini",
            format!("env CLAWMUX_HOME=/s env HOME={h} gemini"),
        ));
        assert_eq!(gemini.spelling_of("progress"), Some(Spelling::Colon));
        assert_eq!(gemini.spelling_of("ship"), None);
        let codex = probe(&spec(
            "codex",
            format!("env HOME={h} CODEX_HOME={h}/cx codex -a never"),
        ));
        assert_eq!(codex.rewrite("/gsd:ship"), "$gsd-ship");
        let claude = probe(&spec("claude", format!("env HOME={h} claude")));
        assert_eq!(claude.rewrite("/gsd:ship"), "/gsd-ship");
    }

    #[test]
    fn listings_by_section() {
        let out = b"n home\ngsd-ship\nother\nn project\nn commands\nplan-phase.md\nnotes.txt\n";
        let i = parse_listings(out, "n");
        assert_eq!(i.spelling_of("ship"), Some(spelling::Spelling::Dash));
        assert_eq!(i.spelling_of("plan-phase"), Some(spelling::Spelling::Colon));
        assert_eq!(i.rewrite("/gsd-plan-phase 2"), "/gsd:plan-phase 2");
        assert!(parse_listings(b"", "n").is_empty());
        // A name that looks like a marker mid-line is a name.
        let i = parse_listings(b"n commands\nx n home\nquick.md\n", "n");
        assert_eq!(i.spelling_of("quick"), Some(spelling::Spelling::Colon));
    }

    #[test]
    fn planning_files_with_their_bound() {
        let ws = Path::new("/w");
        let out = b"n STATE.md\nPhase: 2 of 3 (Cart)\nn ROADMAP.md\n- [x] **Phase 1: A**\n\n";
        let p = parse_planning(out, "n", ws).unwrap().unwrap();
        assert_eq!(p.phase, Some((2, 3)));
        assert_eq!(p.roadmap_phases, Some((1, 1)));
        assert_eq!(parse_planning(b"", "n", ws).unwrap(), None);
        let mut big = b"n STATE.md\n".to_vec();
        big.extend(std::iter::repeat_n(b'x', MAX_PLANNING_BYTES as usize + 1));
        big.push(b'\n');
        let e = parse_planning(&big, "n", ws).unwrap_err();
        assert!(e.to_string().contains("/w/.planning/STATE.md"), "{e}");
    }

    /// The scripts, run by a local `sh` as the host's would run them.
    #[tokio::test]
    async fn the_scripts_read_a_real_tree() {
        let home = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".claude/skills/gsd-ship")).unwrap();
        std::fs::create_dir_all(ws.path().join(".claude/commands/gsd")).unwrap();
        std::fs::write(ws.path().join(".claude/commands/gsd/quick.md"), "x").unwrap();
        std::fs::create_dir_all(ws.path().join(".planning")).unwrap();
        std::fs::write(
            ws.path().join(".planning/STATE.md"),
            "Phase: 1 of 2 (A)\nStatus: planning\n",
        )
        .unwrap();
        let sh = |script: &str, args: &[&str]| {
            let mut cmd = tokio::process::Command::new("sh");
            cmd.args(["-c", script, "sh"]).args(args);
            cmd
        };
        let (w, h) = (ws.path().to_string_lossy(), home.path().to_string_lossy());
        let out = one_shot::run(
            sh(LIST_SCRIPT, &[&w, &h, "n", "1024"]),
            one_shot::ONE_SHOT_TIMEOUT,
        )
        .await
        .unwrap();
        let i = parse_listings(&out.stdout, "n");
        assert_eq!(i.spelling_of("ship"), Some(spelling::Spelling::Dash));
        assert_eq!(i.spelling_of("quick"), Some(spelling::Spelling::Colon));
        let out = one_shot::run(
            sh(PLANNING_SCRIPT, &[&w, "n", "262145"]),
            one_shot::ONE_SHOT_TIMEOUT,
        )
        .await
        .unwrap();
        let p = parse_planning(&out.stdout, "n", ws.path())
            .unwrap()
            .unwrap();
        assert_eq!(p.summary(), "phase 1 of 2 (A) · planning");
        let out = one_shot::run(
            sh(PLANNING_SCRIPT, &["/no/such", "n", "9"]),
            one_shot::ONE_SHOT_TIMEOUT,
        )
        .await
        .unwrap();
        assert_eq!(parse_planning(&out.stdout, "n", ws.path()).unwrap(), None);
    }
}
