//! The event log on a really full disk (a small tmpfs): failed records are
//! counted and reported with the next record that fits, health turns
//! `Failing` once and back, and a record cut short by the full disk never
//! swallows the next one. Mounting needs root (the CI runs as root).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use clawmux::store::event_log::{EventRecord, LogHealth};
use clawmux::store::log_read;
use clawmux::store::{EventLog, LogEvent};

/// Size of the test file system: a few records' worth once filled.
const TMPFS_BYTES: usize = 256 << 10;

/// A chat line from `sender` (the phase of the test: before, during, after).
fn line(sender: &str, text: &str) -> LogEvent {
    LogEvent::Message {
        sender: sender.into(),
        text: text.into(),
        chat: "oc_1".parse().unwrap(),
    }
}

/// A record's name: the sender of a chat line, else its kind.
fn name(r: &EventRecord) -> &str {
    match r.kind.as_str() {
        "message" => r.field("sender").unwrap_or_default(),
        kind => kind,
    }
}

/// A tmpfs mounted on a temp dir, unmounted on drop.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount() -> Tmpfs {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o"])
            .arg(format!("size={TMPFS_BYTES},mode=0700"))
            .arg("tmpfs")
            .arg(dir.path())
            .output()
            .expect("mount runs");
        assert!(
            out.status.success(),
            "mounting a tmpfs needs root: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Tmpfs { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// Fills the file system but for about `leave` bytes; returns the filler.
fn fill(dir: &Path, leave: u64) -> PathBuf {
    let filler = dir.join("filler");
    let mut data = Vec::new();
    // SAFETY: statvfs writes into the zeroed struct it is given.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C path and a valid out pointer.
    assert_eq!(unsafe { libc::statvfs(c.as_ptr(), &mut st) }, 0);
    let free = st.f_bavail as u64 * st.f_frsize as u64;
    data.resize(free.saturating_sub(leave) as usize, b'f');
    let _ = fs::write(&filler, &data);
    filler
}

#[test]
fn a_full_disk_loses_no_record_silently_and_tears_nothing() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        crate::support::missing(
            "root",
            "run the peers tier as root (mounting a tmpfs needs it)",
        );
    }
    let fs_ = Tmpfs::mount();
    let dir = fs_.path();
    let log = EventLog::open(dir).unwrap();
    log.append(&line("before", "0")).unwrap();
    let mut health = log.subscribe_health();
    health.mark_unchanged();

    // Leave less than a page: the next records are cut short or refused.
    let filler = fill(dir, 0);
    let pad = "p".repeat(3000);
    let mut failed = 0u64;
    let mut written = Vec::new();
    for i in 1..=20 {
        match log.append(&line("during", &format!("{i} {pad}"))) {
            Ok(()) => written.push(i),
            Err(e) => {
                assert!(e.to_string().contains("No space left"), "{e}");
                failed += 1;
            }
        }
    }
    assert!(failed > 0, "the disk was not full");
    assert_eq!(log.failed_records(), failed);
    assert!(matches!(log.health(), LogHealth::Failing { .. }));
    assert!(health.has_changed().unwrap());
    health.mark_unchanged();

    fs::remove_file(&filler).unwrap();
    log.append(&line("after", "21")).unwrap();
    assert_eq!(log.health(), LogHealth::Ok);
    assert!(health.has_changed().unwrap());

    let got = log_read::read_all(dir).unwrap();
    let kinds: Vec<_> = got.records.iter().map(name).collect();
    eprintln!(
        "{failed} of 20 failed; log: {kinds:?}; skipped lines {}",
        got.skipped_lines
    );
    let lost = got
        .records
        .iter()
        .find(|r| r.kind == "log_write_failed")
        .expect("the failures are reported");
    assert_eq!(lost.fields["count"], failed);
    // Every record either is in the log or is counted: none vanished.
    let during = kinds.iter().filter(|k| **k == "during").count();
    assert_eq!(during as u64 + failed, 20);
    assert_eq!(kinds.first(), Some(&"before"));
    assert_eq!(
        kinds.last(),
        Some(&"after"),
        "the record after the outage is whole"
    );
    // At most the one line a failed write cut short is unreadable, and it
    // is marked as repaired.
    assert!(got.skipped_lines <= 1);
    if got.skipped_lines == 1 {
        assert!(kinds.contains(&"log_repaired"), "{kinds:?}");
    }
}
