//! `clawmux prompt`: rendering, `--check`, `--dir` overrides, usage errors.

use super::{assert_contains, clawmux, stderr, stdout};

fn prompt(args: &[&str]) -> std::process::Output {
    let mut all = vec!["prompt"];
    all.extend_from_slice(args);
    clawmux(&all).output().expect("run clawmux")
}

#[test]
fn renders_a_builtin_template_with_its_variables() {
    let out = prompt(&[
        "error_recovery",
        "--var",
        "project=shop",
        "--var",
        "command=/gsd:plan-phase 2",
        "--var",
        "error_line=API Error: 401 {\"type\":\"authentication_error\"}",
        "--var",
        "error_context=line one\nline {{two}}",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with("**shop**: `/gsd:plan-phase 2` stopped with an error.\n"),
        "{text}"
    );
    assert_contains(
        &text,
        "> API Error: 401 {\"type\":\"authentication_error\"}\n",
    );
    // Values are inserted as they are, never rendered again.
    assert_contains(&text, "~~~text\nline one\nline {{two}}\n~~~\n");
    assert_contains(&text, "then send `/gsd:plan-phase 2` again");
    assert_eq!(stderr(&out), "");
}

#[test]
fn check_lists_placeholders_without_a_value() {
    let out = prompt(&[
        "context_recovery",
        "--check",
        "--var",
        "project=shop",
        "--var",
        "projcet=typo",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stdout(&out),
        "workspace\nreason\nlast_command\nlast_output_tail\n"
    );
    assert_contains(&stderr(&out), "--var projcet is not used");

    let all = [
        "project=p",
        "workspace=/w",
        "reason=pane died",
        "last_command=/gsd:next",
        "last_output_tail=...",
    ];
    let mut args = vec!["context_recovery", "--check"];
    for v in &all {
        args.extend(["--var", v]);
    }
    let out = prompt(&args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "");
}

#[test]
fn a_directory_overrides_templates_file_by_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("error_recovery.md"),
        "{{{{literal}} {{ project }} {{unknown}}\n",
    )
    .unwrap();
    let d = dir.path().to_str().unwrap();

    let out = prompt(&["error_recovery", "--dir", d, "--var", "project=shop"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "{{literal}} shop {{unknown}}\n");

    let out = prompt(&[
        "error_recovery",
        "--dir",
        d,
        "--check",
        "--var",
        "project=shop",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "unknown\n");

    // No override file for this one: the built-in template is used.
    let out = prompt(&[
        "command_mapping",
        "--dir",
        d,
        "--var",
        "project=shop",
        "--var",
        "message=status?",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_contains(&stdout(&out), "for the project \"shop\"");
    assert_contains(&stdout(&out), "~~~text\nstatus?\n~~~");
}

#[test]
fn unreadable_override_directory_is_bad_input() {
    let out = prompt(&["error_recovery", "--dir", "/nonexistent/clawmux-prompts"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        "clawmux: cannot read prompt directory /nonexistent/clawmux-prompts: No such file or directory (os error 2)\n"
    );

    // The template path is a directory: one plain sentence, exit 2.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("error_recovery.md")).unwrap();
    let out = prompt(&["error_recovery", "--dir", dir.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.ends_with("error_recovery.md is a directory, not a file\n"),
        "{err}"
    );
    assert_eq!(err.matches("directory").count(), 1, "{err}");
    assert_eq!(stdout(&out), "");
}

#[test]
fn unknown_names_and_malformed_vars_are_usage_errors() {
    let cases: [&[&str]; 6] = [
        &["nope"],
        &["../prompts/error_recovery"],
        &["error_recovery", "--var", "novalue"],
        &["error_recovery", "--var", "=value"],
        &["error_recovery", "--var", "1st=value"],
        &["error_recovery", "--var", "two words=value"],
    ];
    for args in cases {
        let out = prompt(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert_eq!(stdout(&out), "", "{args:?}");
        assert!(
            stderr(&out).starts_with("clawmux: "),
            "{args:?}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn command_mapping_only_offers_commands_clawmux_routes() {
    use clawmux::bridge::router::{Route, route};
    let text = std::fs::read_to_string(super::repo_file("prompts/command_mapping.md")).unwrap();
    let rows: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| l.starts_with("| /gsd:"))
        .map(|l| l.split('|').map(str::trim).collect())
        .collect();
    assert!(rows.len() >= 18, "{} commands", rows.len());
    for row in rows {
        let (command, args) = (row[1], row[2]);
        let message = if args.is_empty() || args.starts_with("optional") {
            command.to_owned()
        } else {
            format!("{command} value")
        };
        match route(&message) {
            Route::Builtin(_) | Route::Agent(_) => {}
            other => panic!("{message} routes to {other:?}"),
        }
    }
}
