//! The hook side of the socket: connect with a deadline, write one line.
//!
//! A blocking `connect(2)` to a Unix socket whose daemon has stopped
//! accepting waits until the backlog drains, which could stall Claude Code.
//! Linux bounds that wait by the socket's send timeout (`SO_SNDTIMEO`), which
//! must be set before the socket connects, so the socket is made with
//! `socket2` rather than `UnixStream::connect`. (A non-blocking connect
//! with a poll does not help: on a full backlog a Unix socket answers
//! EAGAIN at once instead of waiting.)

use std::io::{self, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use super::{Envelope, HookError, socket_path};

/// How long `clawmux hook` waits to connect and to write its line. The
/// daemon accepts in microseconds; anything slower means it is stuck, and
/// Claude Code must not wait for it.
pub const CONNECT_TIMEOUT: Duration = Duration::from_millis(200);

/// Sends `envelope` to the daemon listening in `state_dir`.
pub fn forward(state_dir: &Path, envelope: &Envelope) -> Result<(), HookError> {
    let path = socket_path(state_dir)?;
    let mut stream =
        connect_with_timeout(&path, CONNECT_TIMEOUT).map_err(HookError::io("connect to", &path))?;
    stream
        .write_all(envelope.as_bytes())
        .map_err(HookError::io("write to", &path))
}

/// `UnixStream::connect`, but giving up after `timeout` when the listener's
/// backlog is full. `path` must fit `sun_path` (checked by `socket_path`).
pub(crate) fn connect_with_timeout(path: &Path, timeout: Duration) -> io::Result<UnixStream> {
    use socket2::{Domain, SockAddr, Socket, Type};
    let addr = SockAddr::unix(path)?;
    // Close-on-exec, like every socket std makes.
    let socket = Socket::new(Domain::UNIX, Type::STREAM, None)?;
    socket.set_write_timeout(Some(timeout))?;
    loop {
        match socket.connect(&addr) {
            Ok(()) => return Ok(socket.into()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}
