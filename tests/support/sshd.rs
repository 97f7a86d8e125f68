//! A private OpenSSH server on 127.0.0.1 for one test: its own host key,
//! its own authorized key, its own free port, as the current user; killed
//! (with every connection it serves) when dropped. Nothing but loopback.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Where Debian's openssh-server puts the daemon (.ci/run installs it).
const SSHD: &str = "/usr/sbin/sshd";
/// How long sshd may take to say it listens.
const START_WAIT: Duration = Duration::from_secs(20);
/// Lines of sshd's log kept for a failing test's message.
const LOG_LINES: usize = 200;

pub struct Sshd {
    child: Child,
    pub port: u16,
    dir: tempfile::TempDir,
    log: Arc<Mutex<Vec<String>>>,
}

/// Whether the tests that need a real sshd can run; says loudly when not.
pub fn available(test: &str) -> bool {
    let ok = Path::new(SSHD).exists();
    if !ok {
        eprintln!(
            "SKIPPED {test}: {SSHD} is not installed (apt-get install openssh-server; .ci/run does)"
        );
    }
    ok
}

/// A port nothing listens on (bound, then closed).
pub fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a port");
    listener.local_addr().expect("local address").port()
}

/// The client side: `ssh` to 127.0.0.1 on `port` with `key`, quiet, never
/// asking anything, trusting no file of the user's, then `tmux`.
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
    // The far side sees none of this process's environment: tell its tmux
    // where the test's servers are.
    if let Some(dir) = std::env::var_os("TMUX_TMPDIR") {
        argv.extend([
            "env".into(),
            format!("TMUX_TMPDIR={}", dir.to_string_lossy()),
        ]);
    }
    argv.push("tmux".into());
    argv
}

impl Sshd {
    /// Starts sshd on a free port and waits until it listens.
    pub fn start() -> Sshd {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path();
        for key in ["host_key", "client_key"] {
            let out = Command::new("ssh-keygen")
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(path.join(key))
                .output()
                .expect("ssh-keygen runs");
            assert!(out.status.success(), "ssh-keygen: {out:?}");
        }
        let public = std::fs::read_to_string(path.join("client_key.pub")).expect("public key");
        std::fs::write(path.join("authorized_keys"), public).expect("authorized_keys");
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700)).expect("chmod");
        // sshd wants its privilege separation directory even when it runs
        // as the user it lets in.
        let _ = std::fs::create_dir_all("/run/sshd");
        let log = Arc::new(Mutex::new(Vec::new()));
        let port = closed_port();
        let child = launch(path, port, &log);
        Sshd {
            child,
            port,
            dir,
            log,
        }
    }

    /// The private key the server lets in.
    pub fn key(&self) -> PathBuf {
        self.dir.path().join("client_key")
    }

    /// `ssh … 127.0.0.1 tmux` for this server.
    pub fn ssh_tmux(&self) -> Vec<String> {
        ssh_tmux(self.port, &self.key())
    }

    /// What sshd logged so far.
    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Kills every connection the server serves (its child processes), as
    /// a network cut would; the server goes on listening. How many.
    pub fn kill_connections(&self) -> usize {
        let children = children_of(self.child.id());
        for pid in &children {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
        children.len()
    }

    /// The server down (listener and connections) until [`Sshd::start_again`].
    pub fn stop(&mut self) {
        self.kill_connections();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The server back on the same port.
    pub fn start_again(&mut self) {
        self.child = launch(self.dir.path(), self.port, &self.log);
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts sshd on `port` and waits until it says it listens; its log
/// goes to `log`.
fn launch(dir: &Path, port: u16, log: &Arc<Mutex<Vec<String>>>) -> Child {
    let (child, lines) = spawn(dir, port);
    let (ready_tx, ready) = mpsc::channel();
    let sink = log.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(lines).lines().map_while(Result::ok) {
            if line.contains("Server listening on 127.0.0.1") {
                let _ = ready_tx.send(());
            }
            let mut log = sink.lock().unwrap_or_else(|e| e.into_inner());
            if log.len() < LOG_LINES {
                log.push(line);
            }
        }
    });
    if ready.recv_timeout(START_WAIT).is_err() {
        let log = log.lock().unwrap_or_else(|e| e.into_inner()).join("\n");
        panic!("sshd did not listen on {port}:\n{log}");
    }
    child
}

fn spawn(dir: &Path, port: u16) -> (Child, std::process::ChildStderr) {
    let config = format!(
        "Port {port}\n\
         ListenAddress 127.0.0.1\n\
         HostKey {dir}/host_key\n\
         PidFile none\n\
         AuthorizedKeysFile {dir}/authorized_keys\n\
         PermitRootLogin prohibit-password\n\
         PubkeyAuthentication yes\n\
         PasswordAuthentication no\n\
         KbdInteractiveAuthentication no\n\
         UsePAM no\n\
         StrictModes no\n\
         MaxStartups 200\n\
         MaxSessions 200\n\
         LogLevel INFO\n",
        dir = dir.display()
    );
    let file = dir.join(format!("sshd_config.{port}"));
    std::fs::write(&file, config).expect("sshd_config");
    let mut child = Command::new(SSHD)
        .arg("-D")
        .arg("-e")
        .arg("-f")
        .arg(&file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sshd starts");
    let stderr = child.stderr.take().expect("sshd stderr");
    (child, stderr)
}

/// The pids whose parent is `pid` (from /proc).
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|child| {
            std::fs::read_to_string(format!("/proc/{child}/stat"))
                .ok()
                .and_then(|stat| {
                    // `pid (comm) state ppid …`: comm may hold spaces.
                    let after = stat.rsplit_once(')')?.1;
                    after.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(pid)
        })
        .collect()
}
