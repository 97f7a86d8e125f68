//! A private OpenSSH server on 127.0.0.1 standing in for a remote host in
//! `clawmux bench --hosts`: own host key, own authorized key, own free
//! port, the current user; killed (with its connections) when dropped.
//! Nothing but loopback.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use super::BenchError;

/// Where Debian's openssh-server puts the daemon.
pub const SSHD: &str = "/usr/sbin/sshd";
/// How long sshd may take to say it listens.
const START_WAIT: Duration = Duration::from_secs(20);

pub struct LoopbackSshd {
    child: Child,
    pub port: u16,
    /// Keys and config, removed on drop.
    dir: PathBuf,
}

impl LoopbackSshd {
    /// Starts sshd on a free port and waits until it listens.
    pub fn start() -> Result<LoopbackSshd, BenchError> {
        if !Path::new(SSHD).exists() {
            return Err(BenchError::Role(format!(
                "{SSHD} is not installed (apt-get install openssh-server)"
            )));
        }
        let n = rand::random::<u64>();
        let dir = std::env::temp_dir().join(format!("clawmux-sshd-{}-{n:x}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| BenchError::io("creating a temp dir", e))?;
        let path = dir.as_path();
        for key in ["host_key", "client_key"] {
            let out = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(path.join(key))
                .output()
                .map_err(|e| BenchError::io("running ssh-keygen", e))?;
            if !out.status.success() {
                return Err(BenchError::Role(format!(
                    "ssh-keygen: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
        }
        let io = |what: &str| {
            let what = what.to_string();
            move |e| BenchError::io(what, e)
        };
        let public = std::fs::read_to_string(path.join("client_key.pub")).map_err(io("key"))?;
        std::fs::write(path.join("authorized_keys"), public).map_err(io("authorized_keys"))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
            .map_err(io("chmod"))?;
        // Its privilege separation directory, needed even as one user.
        let _ = std::fs::create_dir_all("/run/sshd");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(io("finding a free port"))?
            .port();
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {dir}/host_key\nPidFile none\n\
             AuthorizedKeysFile {dir}/authorized_keys\nPermitRootLogin prohibit-password\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
             StrictModes no\nMaxStartups 200\nMaxSessions 200\n",
            dir = path.display()
        );
        let file = path.join("sshd_config");
        std::fs::write(&file, config).map_err(io("sshd_config"))?;
        let mut child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(&file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(io("starting sshd"))?;
        let stderr = child.stderr.take();
        let (ready_tx, ready) = mpsc::channel();
        std::thread::spawn(move || {
            let Some(stderr) = stderr else { return };
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("Server listening on 127.0.0.1") {
                    let _ = ready_tx.send(());
                }
            }
        });
        let sshd = LoopbackSshd {
            child,
            port,
            dir: dir.clone(),
        };
        ready
            .recv_timeout(START_WAIT)
            .map_err(|_| BenchError::Role(format!("sshd did not listen on port {port}")))?;
        Ok(sshd)
    }

    /// The private key the server lets in.
    pub fn key(&self) -> PathBuf {
        self.dir.join("client_key")
    }

    /// `ssh … 127.0.0.1 tmux` for this server: no user files, no
    /// questions, quiet.
    pub fn ssh_tmux(&self) -> Vec<String> {
        let mut argv: Vec<String> = [
            "ssh",
            "-F",
            "/dev/null",
            "-i",
            &self.key().display().to_string(),
            "-p",
            &self.port.to_string(),
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "BatchMode=yes",
            "-o",
            "LogLevel=ERROR",
            "127.0.0.1",
        ]
        .map(String::from)
        .to_vec();
        if let Some(dir) = std::env::var_os("TMUX_TMPDIR") {
            argv.extend([
                "env".into(),
                format!("TMUX_TMPDIR={}", dir.to_string_lossy()),
            ]);
        }
        argv.push("tmux".into());
        argv
    }
}

impl Drop for LoopbackSshd {
    fn drop(&mut self) {
        for pid in super::procfs::children(self.child.id()) {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
