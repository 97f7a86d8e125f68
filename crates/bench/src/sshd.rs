//! A private OpenSSH server on 127.0.0.1 standing in for a remote host
//! (`clawmux bench --hosts`, and the tests): own host key, own authorized
//! key, own free port, the current user; killed (with its connections) when
//! dropped. Nothing but loopback.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use super::BenchError;
use super::procfs::children;

/// Where Debian's openssh-server puts the daemon.
pub const SSHD: &str = "/usr/sbin/sshd";
/// How long sshd may take to say it listens.
const START_WAIT: Duration = Duration::from_secs(20);
/// Lines of sshd's log kept (to explain a failure).
const LOG_LINES: usize = 200;

pub struct LoopbackSshd {
    /// The listening server while it runs.
    child: Option<Child>,
    pub port: u16,
    /// Keys and config, removed on drop.
    dir: PathBuf,
    log: Arc<Mutex<Vec<String>>>,
}

/// A port nothing listens on (bound, then closed).
pub fn closed_port() -> Result<u16, BenchError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| BenchError::io("finding a free port", e))
}

/// `ssh` to 127.0.0.1 on `port` with `key`, reading no user file, never
/// asking, quiet, then `tmux` (told where the servers are when
/// `TMUX_TMPDIR` is set here: the far side sees none of this environment).
pub fn ssh_tmux(port: u16, key: &Path) -> Vec<String> {
    let mut argv: Vec<String> = [
        "ssh",
        "-F",
        "/dev/null",
        "-i",
        &key.display().to_string(),
        "-p",
        &port.to_string(),
        "-o",
        "StrictHostKeyChecking=no",
        "-o",
        "UserKnownHostsFile=/dev/null",
        "-o",
        "BatchMode=yes",
        "-o",
        "LogLevel=ERROR",
        "-o",
        "ConnectTimeout=10",
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
        let io = |what: &str| {
            let what = what.to_string();
            move |e| BenchError::io(what, e)
        };
        std::fs::create_dir_all(&dir).map_err(io("creating a temp dir"))?;
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut sshd = LoopbackSshd {
            child: None,
            port: closed_port()?,
            dir,
            log,
        };
        for key in ["host_key", "client_key"] {
            let out = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(sshd.dir.join(key))
                .output()
                .map_err(io("running ssh-keygen"))?;
            if !out.status.success() {
                return Err(BenchError::Role(format!(
                    "ssh-keygen: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
        }
        let public =
            std::fs::read_to_string(sshd.dir.join("client_key.pub")).map_err(io("public key"))?;
        std::fs::write(sshd.dir.join("authorized_keys"), public).map_err(io("authorized_keys"))?;
        std::fs::set_permissions(&sshd.dir, std::fs::Permissions::from_mode(0o700))
            .map_err(io("chmod"))?;
        // Its privilege separation directory, needed even as one user.
        let _ = std::fs::create_dir_all("/run/sshd");
        sshd.start_again()?;
        Ok(sshd)
    }

    /// Starts the server (again) on its port and waits until it listens.
    pub fn start_again(&mut self) -> Result<(), BenchError> {
        let config = format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {dir}/host_key\nPidFile none\n\
             AuthorizedKeysFile {dir}/authorized_keys\nPermitRootLogin prohibit-password\n\
             PubkeyAuthentication yes\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n\
             MaxStartups 200\nMaxSessions 200\nLogLevel INFO\n",
            port = self.port,
            dir = self.dir.display()
        );
        let file = self.dir.join("sshd_config");
        std::fs::write(&file, config).map_err(|e| BenchError::io("writing sshd_config", e))?;
        let mut child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(&file)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| BenchError::io("starting sshd", e))?;
        let stderr = child.stderr.take();
        self.child = Some(child);
        let (ready_tx, ready) = mpsc::channel();
        let sink = self.log.clone();
        std::thread::spawn(move || {
            let Some(stderr) = stderr else { return };
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("Server listening on 127.0.0.1") {
                    let _ = ready_tx.send(());
                }
                let mut log = sink.lock().unwrap_or_else(|e| e.into_inner());
                if log.len() < LOG_LINES {
                    log.push(line);
                }
            }
        });
        ready.recv_timeout(START_WAIT).map_err(|_| {
            BenchError::Role(format!(
                "sshd did not listen on port {}: {}",
                self.port,
                self.log().join("\n")
            ))
        })
    }

    /// The private key the server lets in.
    pub fn key(&self) -> PathBuf {
        self.dir.join("client_key")
    }

    /// `ssh … 127.0.0.1 tmux` for this server.
    pub fn ssh_tmux(&self) -> Vec<String> {
        ssh_tmux(self.port, &self.key())
    }

    /// What sshd logged so far (its first `LOG_LINES` lines).
    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Kills every connection the server serves (its child processes), as
    /// a network cut would; the server goes on listening. How many.
    pub fn kill_connections(&self) -> usize {
        let Some(child) = &self.child else { return 0 };
        let connections = children(child.id());
        for pid in &connections {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
        connections.len()
    }

    /// The server down, listener and connections, until
    /// [`LoopbackSshd::start_again`].
    /// The listener goes first, so a client reconnecting when its
    /// connection is cut finds the port closed, as with a host gone down.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let connections = children(child.id());
        let _ = child.kill();
        let _ = child.wait();
        for pid in connections {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

impl Drop for LoopbackSshd {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
