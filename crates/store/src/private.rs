//! Private files: the state directory is 0700 and every file in it that
//! holds chat text or identities (the event log, the state file and its
//! backups, the state database with its WAL, pairing requests, allowed
//! senders) 0600. They are created with
//! that mode whatever the umask, and checked at start: a wider mode is
//! reported, and tightened when the current user owns the path.

use std::fs::{self, DirBuilder, File, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The state directory's mode: only its owner may list or enter it.
pub const DIR_MODE: u32 = 0o700;
/// The mode of every file in it: only its owner may read or write it.
pub const FILE_MODE: u32 = 0o600;
/// Names (and name prefixes, for backups and rotated files) of the files
/// checked at start.
const PRIVATE_FILES: [&str; 5] = [
    "events.jsonl",
    // The database, its `-wal` and `-shm` files and a copy moved aside.
    "state.db",
    "state.json",
    "pairing.json",
    "allowed.json",
];

/// Creates `dir` (and missing parents) with [`DIR_MODE`]. An existing
/// directory is left as it is (see [`check`]).
pub fn create_dir(dir: &Path) -> io::Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)?;
    // The umask may have taken bits away from the owner: set the mode exactly.
    fs::set_permissions(dir, Permissions::from_mode(DIR_MODE))
}

/// Opens `path` for appending (and reading, to check its end), creating
/// it with [`FILE_MODE`].
pub fn open_append(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .create(true)
        .append(true)
        .mode(FILE_MODE)
        .open(path)?;
    exact_mode(&file)?;
    Ok(file)
}

/// Creates (or truncates) `path` for writing with [`FILE_MODE`].
pub fn create(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(FILE_MODE)
        .open(path)?;
    exact_mode(&file)?;
    Ok(file)
}

/// A file created under an unusual umask gets exactly [`FILE_MODE`]; one
/// that already existed with a wider mode is left to [`check`].
fn exact_mode(file: &File) -> io::Result<()> {
    let mode = file.metadata()?.mode() & 0o777;
    if mode & !FILE_MODE == 0 && mode != FILE_MODE {
        file.set_permissions(Permissions::from_mode(FILE_MODE))?;
    }
    Ok(())
}

/// A path found wider than it should be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub path: PathBuf,
    /// The mode found (permission bits).
    pub mode: u32,
    /// The mode it should have.
    pub wanted: u32,
    /// Whether it was tightened (only paths the current user owns are).
    pub tightened: bool,
    /// Why it could not be tightened, if it was not.
    pub problem: Option<String>,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} had mode {:o} (readable by others; want {:o})",
            self.path.display(),
            self.mode,
            self.wanted
        )?;
        match (&self.problem, self.tightened) {
            (_, true) => write!(f, "; tightened"),
            (Some(p), false) => write!(f, "; left as is: {p}"),
            (None, false) => write!(f, "; left as is"),
        }
    }
}

/// Checks the state directory and its private files; tightens what the
/// current user owns and reports every path that was wider.
pub fn check(dir: &Path) -> Vec<Finding> {
    let mut found = Vec::new();
    check_one(dir, DIR_MODE, &mut found);
    let Ok(entries) = fs::read_dir(dir) else {
        return found;
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            PRIVATE_FILES.iter().any(|p| name.starts_with(p))
        })
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.path())
        .collect();
    paths.sort();
    for path in paths {
        check_one(&path, FILE_MODE, &mut found);
    }
    found
}

fn check_one(path: &Path, wanted: u32, found: &mut Vec<Finding>) {
    // symlink_metadata: a link is judged (and never followed) as itself.
    let Ok(meta) = fs::symlink_metadata(path) else {
        return;
    };
    let mode = meta.mode() & 0o777;
    if mode & !wanted == 0 {
        return;
    }
    let ours = meta.uid() == rustix::process::geteuid().as_raw();
    let (tightened, problem) = if !ours {
        (false, Some(format!("owned by uid {}, not us", meta.uid())))
    } else if meta.file_type().is_symlink() {
        (false, Some("a symbolic link".to_string()))
    } else {
        match fs::set_permissions(path, Permissions::from_mode(mode & wanted)) {
            Ok(()) => (true, None),
            Err(e) => (false, Some(e.to_string())),
        }
    };
    found.push(Finding {
        path: path.to_path_buf(),
        mode,
        wanted,
        tightened,
        problem,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(path: &Path) -> u32 {
        fs::metadata(path).unwrap().mode() & 0o777
    }

    #[test]
    fn created_private() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/state");
        create_dir(&dir).unwrap();
        assert_eq!(mode(&dir), DIR_MODE);
        let log = dir.join("events.jsonl");
        open_append(&log).unwrap();
        assert_eq!(mode(&log), FILE_MODE);
        let file = dir.join("state.json.tmp");
        create(&file).unwrap();
        assert_eq!(mode(&file), FILE_MODE);
        assert_eq!(check(&dir), vec![]);
    }

    #[test]
    fn wider_paths_are_reported_and_tightened() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path();
        fs::set_permissions(dir, Permissions::from_mode(0o755)).unwrap();
        for name in ["events.jsonl.1", "state.json.2", "config.toml"] {
            fs::write(dir.join(name), "x").unwrap();
            fs::set_permissions(dir.join(name), Permissions::from_mode(0o644)).unwrap();
        }
        let found = check(dir);
        let paths: Vec<_> = found.iter().map(|f| f.path.clone()).collect();
        assert_eq!(
            paths,
            [
                dir.to_path_buf(),
                dir.join("events.jsonl.1"),
                dir.join("state.json.2")
            ]
        );
        assert!(found.iter().all(|f| f.tightened), "{found:?}");
        assert_eq!(
            found[0].to_string(),
            format!(
                "{} had mode 755 (readable by others; want 700); tightened",
                dir.display()
            )
        );
        assert_eq!(mode(dir), 0o700);
        assert_eq!(mode(&dir.join("state.json.2")), 0o600);
        // Not a file holding chat text: not ours to judge.
        assert_eq!(mode(&dir.join("config.toml")), 0o644);
        assert_eq!(check(dir), vec![], "nothing left to report");
    }
}
