//! Change folders: the slug rule, the `OpenSpec change slug: <slug>` line a
//! Chorus proposal description carries, the three-signal activity check
//! (`CHORUS_OPENSPEC_ACTIVE`), and creating `openspec/changes/<slug>/`.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

use super::cli::{CliError, OpenSpecCli};
use super::text::js_regex;

/// Longest change name OpenSpec accepts, in characters.
pub const MAX_SLUG_CHARS: usize = 200;
/// The literal prefix of the provenance line in a proposal description.
pub const SLUG_LINE_PREFIX: &str = "OpenSpec change slug: ";

static SLUG: LazyLock<Regex> = LazyLock::new(|| js_regex(r"^[a-z0-9]+(?:-[a-z0-9]+)*$"));

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SlugError {
    #[error(
        "change slug {0:?} must be kebab-case: lowercase letters and digits separated by single hyphens (e.g. add-export-csv)"
    )]
    NotKebab(String),
    #[error("change slug is {0} characters long; at most {MAX_SLUG_CHARS} are allowed")]
    TooLong(usize),
}

/// Checks the change-name rule `^[a-z0-9]+(?:-[a-z0-9]+)*$`, <= 200 chars.
pub fn validate_slug(slug: &str) -> Result<(), SlugError> {
    let len = slug.chars().count();
    if len > MAX_SLUG_CHARS {
        return Err(SlugError::TooLong(len));
    }
    if !SLUG.is_match(slug) {
        return Err(SlugError::NotKebab(slug.to_string()));
    }
    Ok(())
}

/// The provenance line for a proposal description.
pub fn slug_line(slug: &str) -> String {
    format!("{SLUG_LINE_PREFIX}{slug}")
}

/// The slug named by the description's `OpenSpec change slug: <slug>` line:
/// a line of its own, exact prefix, a valid slug, nothing after it. `None`
/// when there is no such line; the first one wins.
pub fn slug_from_description(description: &str) -> Option<&str> {
    description
        .lines()
        .filter_map(|l| {
            l.strip_suffix('\r')
                .unwrap_or(l)
                .strip_prefix(SLUG_LINE_PREFIX)
        })
        .find(|s| validate_slug(s).is_ok())
}

/// Folder of a change.
pub fn change_dir(root: &Path, slug: &str) -> PathBuf {
    root.join("openspec/changes").join(slug)
}

/// The three signals of OpenSpec mode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detection {
    /// `CHORUS_OPENSPEC_MODE` is not `off`.
    pub mode_on: bool,
    /// `<root>/openspec/` is a directory.
    pub has_folder: bool,
    /// The CLI's `--version` answer, when it answered.
    pub cli_version: Option<String>,
}

impl Detection {
    /// `CHORUS_OPENSPEC_ACTIVE`: all three signals.
    pub fn active(&self) -> bool {
        self.mode_on && self.has_folder && self.cli_version.is_some()
    }

    /// The folder exists but the CLI does not: the user should install it.
    pub fn needs_install_hint(&self) -> bool {
        self.mode_on && self.has_folder && self.cli_version.is_none()
    }
}

/// Computes the signals; `mode` is the value of `CHORUS_OPENSPEC_MODE`.
pub fn detect(root: &Path, mode: Option<&str>, cli: &OpenSpecCli) -> Detection {
    let mode_on = mode != Some("off");
    let has_folder = root.join("openspec").is_dir();
    // The CLI is probed only when it can matter, like the original shell check.
    let cli_version = (mode_on && has_folder).then(|| cli.version()).flatten();
    Detection {
        mode_on,
        has_folder,
        cli_version,
    }
}

#[derive(Debug, thiserror::Error)]
pub enum NewChangeError {
    #[error(transparent)]
    Slug(#[from] SlugError),
    #[error("change {0} already exists; pick another slug")]
    Exists(PathBuf),
    #[error("no openspec/ folder under {0}; run `openspec init` there first")]
    NoOpenSpec(PathBuf),
    #[error(transparent)]
    Cli(#[from] CliError),
    #[error("cannot create {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Creates `openspec/changes/<slug>/` through `openspec new change` when the
/// CLI is available, else writes the same two files it writes (README.md with
/// the description, `.openspec.yaml` with the schema and date).
pub fn new_change(
    root: &Path,
    slug: &str,
    description: &str,
    cli: Option<&OpenSpecCli>,
) -> Result<PathBuf, NewChangeError> {
    validate_slug(slug)?;
    if !root.join("openspec").is_dir() {
        return Err(NewChangeError::NoOpenSpec(root.to_path_buf()));
    }
    let dir = change_dir(root, slug);
    if dir.exists() {
        return Err(NewChangeError::Exists(dir));
    }
    if let Some(cli) = cli {
        cli.run(root, ["new", "change", slug, "--description", description])?;
        return Ok(dir);
    }
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| NewChangeError::Io { path, source }
    };
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    let readme = dir.join("README.md");
    std::fs::write(&readme, format!("# {slug}\n\n{description}\n")).map_err(io(&readme))?;
    let meta = dir.join(super::metadata::METADATA_FILENAME);
    let yaml = format!(
        "schema: {}\ncreated: {}\n",
        super::metadata::BUILT_IN_SCHEMA,
        today()
    );
    std::fs::write(&meta, yaml).map_err(io(&meta))?;
    Ok(dir)
}

/// Today's UTC date as `YYYY-MM-DD`.
pub(crate) fn today() -> String {
    utc_date(jiff::Timestamp::now())
}

/// `YYYY-MM-DD` of an instant, in UTC (OpenSpec's metadata dates).
fn utc_date(at: jiff::Timestamp) -> String {
    at.to_zoned_datetime(jiff::tz::TimeZone::UTC)
        .date()
        .to_string()
}

/// The date `days` after the Unix epoch.
#[cfg(test)]
fn civil_date(days: u64) -> String {
    let seconds = i64::try_from(days)
        .unwrap_or(i64::MAX)
        .saturating_mul(86_400);
    jiff::Timestamp::from_second(seconds).map_or_else(|_| String::from("out of range"), utc_date)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slug_rule() {
        assert!(validate_slug("add-export-csv").is_ok());
        assert!(validate_slug("a1").is_ok());
        for bad in ["", "Add", "add_x", "add--x", "-a", "a-", "add x", "é"] {
            assert!(validate_slug(bad).is_err(), "{bad}");
        }
        assert_eq!(
            validate_slug(&"a".repeat(201)),
            Err(SlugError::TooLong(201))
        );
        assert!(validate_slug(&"a".repeat(200)).is_ok());
    }

    #[test]
    fn slug_line_round_trips_and_is_strict() {
        let desc = format!("Idea.\n{}\r\nmore", slug_line("add-x"));
        assert_eq!(slug_from_description(&desc), Some("add-x"));
        assert_eq!(slug_from_description("openspec change slug: add-x"), None);
        assert_eq!(slug_from_description("OpenSpec change slug: add-x."), None);
        assert_eq!(
            slug_from_description("see OpenSpec change slug: add-x"),
            None
        );
        assert_eq!(slug_from_description("OpenSpec change slug:  add-x"), None);
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_date(0), "1970-01-01");
        assert_eq!(civil_date(20_786), "2026-11-29");
        assert_eq!(civil_date(11_016), "2000-02-29");
    }
}
