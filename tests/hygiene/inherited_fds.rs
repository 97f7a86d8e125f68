//! A caller's pipe passed to `clawmux run` beyond stdio (as OpenClaw's exec
//! tool and CI runners leave them) is closed in every child clawmux starts:
//! the caller sees the end of the pipe when clawmux exits, although the
//! tmux server it started lives on.

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Stdio;

use super::{WAIT, clawmux};
use crate::support::tmux::TmuxServer;

/// Where the caller's pipe lands in the child: the first descriptor past stdio.
const CALLER_FD: i32 = 3;

#[test]
fn a_pipe_inherited_by_run_is_not_held_by_the_tmux_server_it_starts() {
    let tmux = TmuxServer::new();
    let home = super::sim_home(&tmux);
    // Both ends close-on-exec here, so no other test's child takes them;
    // only this child gets the write end, as an inheritable descriptor 3.
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two descriptors, owned just below.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let write_fd = fds[1];
    let mut cmd = clawmux(
        home.path(),
        &["run", "--project", "demo", "--agent", "sim", "--", "hello"],
    );
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: dup2 only, between fork and exec; dup2 leaves the new
    // descriptor without close-on-exec, as a careless caller would.
    unsafe {
        cmd.pre_exec(move || {
            if libc::dup2(write_fd, CALLER_FD) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let status = cmd.status().expect("clawmux run");
    assert_eq!(status.code(), Some(0), "{status:?}");
    drop(write);

    // The tmux server clawmux started is still running, and yet the pipe
    // has no writer left: a read sees its end.
    assert!(tmux.capture("=cm-demo:").contains("You said: hello"));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut rest = Vec::new();
        let read = std::fs::File::from(read).read_to_end(&mut rest);
        let _ = tx.send(read.map(|_| rest.len()));
    });
    let read = rx
        .recv_timeout(WAIT)
        .expect("the caller's pipe is still held open after clawmux exited");
    assert_eq!(read.ok(), Some(0));
}
