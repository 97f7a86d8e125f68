//! `clawmux openspec detect` and `new`, run as the binary with a controlled
//! PATH (a directory holding a stub `openspec`, or none).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output};

/// A directory with an executable `openspec` that answers `--version` and
/// records the arguments of `new change` in the folder it creates.
fn stub_cli_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("openspec");
    let script = "#!/bin/sh\n\
        [ \"$1\" = --version ] && echo 1.13.2 && exit 0\n\
        if [ \"$1 $2\" = \"new change\" ]; then PATH=/usr/bin:/bin mkdir -p \"openspec/changes/$3\" && printf '%s\\n' \"$@\" > \"openspec/changes/$3/stub-args\"; exit 0; fi\n\
        exit 1\n";
    std::fs::write(&path, script).expect("write");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    dir
}

fn clawmux(path_dir: &Path, args: &[&str], mode: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_clawmux"));
    cmd.arg("openspec")
        .args(args)
        .env("PATH", path_dir)
        .env_remove("CHORUS_OPENSPEC_MODE");
    if let Some(m) = mode {
        cmd.env("CHORUS_OPENSPEC_MODE", m);
    }
    cmd.output().expect("run clawmux")
}

fn assert_success(o: &Output) {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn detect_needs_all_three_signals() {
    let project = tempfile::tempdir().expect("tempdir");
    let root = project.path().to_str().expect("utf-8 path");
    let with_cli = stub_cli_dir();
    let without_cli = tempfile::tempdir().expect("tempdir");

    let o = clawmux(with_cli.path(), &["detect", "--root", root], None);
    assert_eq!(
        (o.status.code(), stdout(&o)),
        (Some(0), "CHORUS_OPENSPEC_ACTIVE=0\n".into()),
        "no openspec/ folder"
    );

    std::fs::create_dir(project.path().join("openspec")).expect("mkdir");
    let o = clawmux(with_cli.path(), &["detect", "--root", root], None);
    assert_eq!(
        (o.status.code(), stdout(&o)),
        (Some(0), "CHORUS_OPENSPEC_ACTIVE=1\n".into())
    );
    assert!(o.stderr.is_empty());

    let o = clawmux(with_cli.path(), &["detect", "--root", root], Some("off"));
    assert_eq!(
        stdout(&o),
        "CHORUS_OPENSPEC_ACTIVE=0\n",
        "the explicit opt-out wins"
    );
    let o = clawmux(with_cli.path(), &["detect", "--root", root], Some("on"));
    assert_eq!(stdout(&o), "CHORUS_OPENSPEC_ACTIVE=1\n");

    let o = clawmux(without_cli.path(), &["detect", "--root", root], None);
    assert_eq!(
        (o.status.code(), stdout(&o)),
        (Some(0), "CHORUS_OPENSPEC_ACTIVE=0\n".into())
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("npm i -g @fission-ai/openspec"));
}

#[test]
fn new_scaffolds_without_the_cli_and_refuses_bad_or_taken_slugs() {
    let project = tempfile::tempdir().expect("tempdir");
    let root = project.path().to_str().expect("utf-8 path");
    let no_cli = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(project.path().join("openspec")).expect("mkdir");

    let o = clawmux(
        no_cli.path(),
        &[
            "new",
            "add-export-csv",
            "--description",
            "Export CSV",
            "--root",
            root,
        ],
        None,
    );
    assert_success(&o);
    let dir = project.path().join("openspec/changes/add-export-csv");
    assert!(
        std::fs::read_to_string(dir.join("README.md"))
            .expect("readme")
            .contains("Export CSV")
    );
    let meta = std::fs::read_to_string(dir.join(".openspec.yaml")).expect("meta");
    assert!(
        meta.starts_with("schema: spec-driven\ncreated: 20"),
        "{meta}"
    );

    let o = clawmux(
        no_cli.path(),
        &[
            "new",
            "add-export-csv",
            "--description",
            "again",
            "--root",
            root,
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2), "a taken slug is bad input");
    for bad in ["Add-Export", "add_export", "add--x", &"a".repeat(201)] {
        let o = clawmux(
            no_cli.path(),
            &["new", bad, "--description", "x", "--root", root],
            None,
        );
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(String::from_utf8_lossy(&o.stderr).contains("slug"));
    }
}

#[test]
fn new_delegates_to_the_cli_when_present() {
    let project = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(project.path().join("openspec")).expect("mkdir");
    let root = project.path().to_str().expect("utf-8 path");
    let cli = stub_cli_dir();
    let o = clawmux(
        cli.path(),
        &["new", "add-x", "--description", "Two words", "--root", root],
        None,
    );
    assert_success(&o);
    let args = std::fs::read_to_string(project.path().join("openspec/changes/add-x/stub-args"))
        .expect("args");
    assert_eq!(args, "new\nchange\nadd-x\n--description\nTwo words\n");
}

#[test]
fn slug_line_is_printed_for_the_proposal_description() {
    let o = clawmux(Path::new("/nonexistent"), &["slug-line", "add-x"], None);
    assert_eq!(stdout(&o), "OpenSpec change slug: add-x\n");
}
