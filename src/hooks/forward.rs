//! The hook side of the socket: connect with a deadline, write one line.
//!
//! A blocking `connect(2)` to a Unix socket whose daemon has stopped
//! accepting waits until the backlog drains, which could stall Claude Code.
//! Linux bounds that wait by the socket's send timeout (`SO_SNDTIMEO`), which
//! std can only set on a socket before it connects when we create it
//! ourselves: hence the small `libc` block below.

use std::io::{self, Write};
use std::mem;
use std::os::fd::{AsRawFd, FromRawFd};
use std::os::unix::ffi::OsStrExt;
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
    let bytes = path.as_os_str().as_bytes();
    // SAFETY: sockaddr_un is plain old data; all zeroes is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { mem::zeroed() };
    if bytes.len() >= addr.sun_path.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "socket path too long",
        ));
    }
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    for (dst, src) in addr.sun_path.iter_mut().zip(bytes) {
        *dst = *src as libc::c_char;
    }
    let len = mem::offset_of!(libc::sockaddr_un, sun_path) + bytes.len() + 1;

    // SAFETY: socket(2) has no memory-safety preconditions.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh socket nobody else owns; the stream closes it.
    let stream = unsafe { UnixStream::from_raw_fd(fd) };
    stream.set_write_timeout(Some(timeout))?;
    loop {
        // SAFETY: `addr` is a valid sockaddr_un and `len` does not exceed it.
        let rc = unsafe {
            libc::connect(
                stream.as_raw_fd(),
                (&raw const addr).cast::<libc::sockaddr>(),
                len as libc::socklen_t,
            )
        };
        if rc == 0 {
            return Ok(stream);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}
