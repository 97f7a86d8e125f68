//! Where the config file is looked for: the XDG config directory, the old
//! place in the state directory still read with a notice, and `--help`
//! saying both defaults.

use std::path::Path;
use std::process::Command;

use super::BIN;

/// `clawmux run` with `HOME` at `home` and no `CLAWMUX_HOME`: a broken
/// config file found by the default lookup is reported by path (exit 2).
fn run_in(home: &Path) -> std::process::Output {
    Command::new(BIN)
        .args(["run", "--project", "demo", "--", "hi"])
        .env("HOME", home)
        .env_remove("CLAWMUX_HOME")
        .env_remove("XDG_CONFIG_HOME")
        .output()
        .expect("clawmux runs")
}

#[test]
fn config_is_read_from_the_config_directory_and_the_old_place_with_a_notice() {
    let home = tempfile::tempdir().unwrap();
    let new = home.path().join(".config/clawmux/config.toml");
    let old = home.path().join(".local/state/clawmux/config.toml");
    std::fs::create_dir_all(new.parent().unwrap()).unwrap();
    std::fs::create_dir_all(old.parent().unwrap()).unwrap();

    std::fs::write(&new, "bogus = [").unwrap();
    let out = run_in(home.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("config {}", new.display())),
        "{stderr}"
    );

    std::fs::remove_file(&new).unwrap();
    std::fs::write(&old, "bogus = [").unwrap();
    let out = run_in(home.path());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("its old place; move it to"), "{stderr}");
    assert!(
        stderr.contains(&format!("config {}", old.display())),
        "{stderr}"
    );
}

#[test]
fn help_says_where_config_and_state_are_by_default() {
    for command in ["serve", "run"] {
        let out = Command::new(BIN)
            .args([command, "--help"])
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&out.stdout).replace(char::is_whitespace, "");
        for default in ["~/.config/clawmux/config.toml", "~/.local/state/clawmux"] {
            assert!(
                help.contains(default),
                "{command} --help lacks {default}:\n{help}"
            );
        }
    }
}
