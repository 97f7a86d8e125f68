//! Ending a private tmux server (`-L NAME`, one clawmux started for itself)
//! together with the programs in its panes.

use std::process::Command;

/// Ends the tmux server on socket `name` and the programs in its panes,
/// and removes its socket file (tmux leaves it behind, even when the
/// server ended by itself). tmux hangs up on its panes as it goes, but
/// Gemini CLI 0.61 outlives the hangup (measured: both of its processes
/// ran on, orphaned, after `kill-server`), so each pane's process group is
/// sent SIGTERM first. Best effort: a server already gone is no error.
pub fn kill_server(name: &str) {
    let panes = Command::new("tmux")
        .args(["-L", name, "list-panes", "-a", "-F", "#{pane_pid}"])
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
        .unwrap_or_default();
    for pid in panes
        .lines()
        .filter_map(|l| l.trim().parse::<i32>().ok())
        .filter(|pid| *pid > 1)
        .filter_map(rustix::process::Pid::from_raw)
    {
        // tmux starts each pane's program as the leader of its own
        // process group. Gone already: nothing to do.
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::TERM);
    }
    let _ = Command::new("tmux")
        .args(["-L", name, "kill-server"])
        .output();
    let _ = std::fs::remove_file(socket_path(name));
}

/// Where tmux puts a `-L` socket: `$TMUX_TMPDIR/tmux-UID/NAME`, `/tmp`
/// without the variable.
fn socket_path(name: &str) -> std::path::PathBuf {
    let dir = std::env::var_os("TMUX_TMPDIR").unwrap_or_else(|| "/tmp".into());
    let uid = rustix::process::getuid().as_raw();
    std::path::Path::new(&dir)
        .join(format!("tmux-{uid}"))
        .join(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pane_program_that_ignores_the_hangup_ends_with_its_server() {
        let name = format!("clawmux-teardown-{}", std::process::id());
        // `trap '' HUP` as Gemini CLI behaves: the hangup alone leaves it.
        let started = Command::new("tmux")
            .args(["-L", &name, "-f", "/dev/null", "new-session", "-d"])
            .args(["sh", "-c", "trap '' HUP; sleep 600"])
            .status();
        assert!(started.is_ok_and(|s| s.success()), "tmux started");
        let out = Command::new("tmux")
            .args([
                "-L",
                &name,
                "list-panes",
                "-a",
                "-F",
                "#{pane_pid} #{socket_path}",
            ])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default();
        let (pid, socket) = out.split_once(' ').unwrap_or_default();
        assert_eq!(socket_path(&name), std::path::Path::new(socket));
        let pid: i32 = pid.parse().unwrap_or(0);
        assert!(pid > 1, "the pane's program: {out:?}");
        let pid = rustix::process::Pid::from_raw(pid).expect("a pid");
        kill_server(&name);
        assert!(
            !std::path::Path::new(socket).exists(),
            "socket {socket} left"
        );
        let alive = || rustix::process::test_kill_process(pid).is_ok();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while alive() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(!alive(), "the program outlived its server");
    }
}
