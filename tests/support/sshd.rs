//! A private OpenSSH server on 127.0.0.1 for one test (the library's
//! loopback sshd: own host key, own authorized key, own free port, the
//! current user, killed with its connections on drop); a test fails when
//! sshd is not installed.

use std::path::Path;

pub use clawmux_bench::sshd::LoopbackSshd as Sshd;
use clawmux_bench::sshd::SSHD;

/// A started sshd; the test fails with sshd's log if it cannot start.
pub fn start() -> Sshd {
    if !Path::new(SSHD).exists() {
        super::missing(SSHD, "apt-get install openssh-server");
    }
    Sshd::start().unwrap_or_else(|e| panic!("sshd: {e}"))
}

/// A port nothing listens on.
pub fn closed_port() -> u16 {
    clawmux_bench::sshd::closed_port().expect("a free port")
}

/// `ssh … 127.0.0.1 tmux` with `key` to `port`.
pub fn ssh_tmux(port: u16, key: &Path) -> Vec<String> {
    clawmux_bench::sshd::ssh_tmux(port, key)
}
