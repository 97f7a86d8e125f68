//! The daemon side of the socket: accept hook connections, decode their
//! lines, hand [`HookEvent`]s out through a bounded queue.
//!
//! Each connection carries one hook (one line) from `clawmux hook`. A bad
//! line is logged and skipped; a slow or oversized connection is dropped;
//! nothing a client sends can stop the listener.

use std::fs;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinHandle;

use super::forward::connect_with_timeout;
use super::{CONNECT_TIMEOUT, HookError, HookEvent, MAX_LINE_BYTES, decode_line, socket_path};

/// Events decoded but not yet taken by the daemon. Hooks come a few per turn;
/// when the queue is full, connection readers wait (clients have already
/// written and gone, so nobody upstream blocks).
pub const EVENT_QUEUE: usize = 256;

/// Connections read at once; more wait in the kernel backlog. Bounds the
/// tasks and file descriptors a misbehaving local client can hold.
pub const MAX_CONNECTIONS: usize = 64;

/// How long a connection may take to send its line and close. `clawmux hook`
/// needs microseconds; this only reaps clients that connect and stall.
pub const READ_TIMEOUT: Duration = Duration::from_secs(2);

/// Pause after a failed `accept` (e.g. out of file descriptors) so the loop
/// does not spin while the condition lasts.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// The hook socket (`hooks.sock`, mode 0600) and the events read from it.
/// The socket file is removed on drop.
pub struct HookListener {
    path: PathBuf,
    inode: u64,
    events: mpsc::Receiver<HookEvent>,
    accept: JoinHandle<()>,
}

impl HookListener {
    /// Listens on `hooks.sock` in `state_dir` (created 0700 if missing). A
    /// socket file nobody listens on is a leftover and is replaced; a live
    /// one is [`HookError::InUse`]. Must be called inside a Tokio runtime.
    pub fn bind(state_dir: &Path) -> Result<HookListener, HookError> {
        let path = socket_path(state_dir)?;
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(state_dir)
            .map_err(HookError::io("create", state_dir))?;
        remove_stale_socket(&path)?;
        let std_listener = std::os::unix::net::UnixListener::bind(&path)
            .map_err(HookError::io("listen on", &path))?;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600))
            .map_err(HookError::io("set permissions of", &path))?;
        let inode = fs::metadata(&path)
            .map_err(HookError::io("stat", &path))?
            .ino();
        std_listener
            .set_nonblocking(true)
            .map_err(HookError::io("configure", &path))?;
        let listener =
            UnixListener::from_std(std_listener).map_err(HookError::io("register", &path))?;
        let (tx, events) = mpsc::channel(EVENT_QUEUE);
        let accept = tokio::spawn(accept_loop(listener, tx));
        Ok(HookListener {
            path,
            inode,
            events,
            accept,
        })
    }

    /// The next hook event, in arrival order. `None` only once the listener
    /// has stopped.
    pub async fn next(&mut self) -> Option<HookEvent> {
        self.events.recv().await
    }

    /// Where the socket lives.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for HookListener {
    fn drop(&mut self) {
        self.accept.abort();
        // Leave the file alone if a newer daemon has replaced it.
        if fs::metadata(&self.path).is_ok_and(|m| m.ino() == self.inode) {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Removes `path` if it is a socket nobody listens on.
fn remove_stale_socket(path: &Path) -> Result<(), HookError> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(HookError::io("stat", path)(e)),
    };
    if !meta.file_type().is_socket() {
        return Err(HookError::NotASocket(path.to_path_buf()));
    }
    match connect_with_timeout(path, CONNECT_TIMEOUT) {
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
            fs::remove_file(path).map_err(HookError::io("remove stale socket", path))
        }
        // Connected, or so busy it did not accept in time: someone is there.
        Ok(_) => Err(HookError::InUse(path.to_path_buf())),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
            Err(HookError::InUse(path.to_path_buf()))
        }
        Err(e) => Err(HookError::io("probe", path)(e)),
    }
}

async fn accept_loop(listener: UnixListener, tx: mpsc::Sender<HookEvent>) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return; // the semaphore is never closed
        };
        match listener.accept().await {
            Ok((stream, _)) => {
                let tx = tx.clone();
                tokio::spawn(async move {
                    read_connection(stream, &tx).await;
                    drop(slot);
                });
            }
            Err(e) => {
                tracing::warn!("hook socket accept failed: {e}");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
            }
        }
    }
}

async fn read_connection(stream: UnixStream, tx: &mpsc::Sender<HookEvent>) {
    let mut buf = Vec::new();
    let limit = u64::try_from(MAX_LINE_BYTES).unwrap_or(u64::MAX) + 1;
    let mut stream = stream.take(limit);
    let read = stream.read_to_end(&mut buf);
    match tokio::time::timeout(READ_TIMEOUT, read).await {
        Err(_) => {
            tracing::warn!(
                "hook connection sent no complete line within {READ_TIMEOUT:?}; dropped"
            );
            return;
        }
        Ok(Err(e)) => {
            tracing::warn!("hook connection read failed: {e}");
            return;
        }
        Ok(Ok(_)) if buf.len() > MAX_LINE_BYTES => {
            tracing::warn!("hook line longer than {MAX_LINE_BYTES} bytes; dropped");
            return;
        }
        Ok(Ok(_)) => {}
    }
    for line in buf.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        match decode_line(line) {
            Ok(event) => {
                if tx.send(event).await.is_err() {
                    return;
                }
            }
            Err(e) => tracing::warn!("skipping hook line: {e}"),
        }
    }
}
