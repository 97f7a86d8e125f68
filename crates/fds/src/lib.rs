//! File descriptors clawmux was started with beyond stdin, stdout and
//! stderr. A caller that runs `clawmux run` with a pipe open (OpenClaw's
//! exec tool, a CI runner) waits for every holder of that pipe to close
//! it; the tmux server clawmux starts outlives clawmux, so an inherited
//! descriptor would keep the caller waiting long after clawmux exited.
//! [`close_inherited_on_exec`] marks them close-on-exec at start-up, so no
//! child (the tmux server, an agent, ssh) inherits them.
//!
//! The workspace's one crate with `unsafe` code (every other crate forbids it):
//! acting on descriptors by number, which no safe API can do because
//! nothing in the process owns them: the inherited ones above, and the
//! standard three ([`borrow_std`]) for terminal calls. Everything else
//! goes through std, `rustix` and `socket2`.

use std::os::fd::{BorrowedFd, RawFd};

/// Where the process's open descriptors are listed (Linux).
const FD_DIR: &str = "/proc/self/fd";
/// Descriptors tried one by one when [`FD_DIR`] cannot be read: well past
/// what a caller leaves open.
const FALLBACK_FD_LIMIT: RawFd = 4096;

/// Marks every open descriptor above 2 close-on-exec. Call it first in
/// `main`, before any other thread or descriptor exists.
pub fn close_inherited_on_exec() {
    let listed: Option<Vec<RawFd>> = std::fs::read_dir(FD_DIR).ok().map(|dir| {
        dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .filter(|fd| *fd > 2)
            .collect()
    });
    match listed {
        Some(fds) => fds.into_iter().for_each(set_cloexec),
        None => (3..FALLBACK_FD_LIMIT).for_each(set_cloexec),
    }
}

/// Standard input, output or error (0, 1, 2) as a borrowed descriptor for
/// a terminal call; `None` for any other number.
pub fn borrow_std(fd: RawFd) -> Option<BorrowedFd<'static>> {
    // SAFETY: 0, 1 and 2 are open for the whole life of the process
    // (std never closes them and neither does clawmux); at worst one is
    // /dev/null or closed by the caller, and the call fails with EBADF.
    (0..=2)
        .contains(&fd)
        .then(|| unsafe { BorrowedFd::borrow_raw(fd) })
}

/// Sets `FD_CLOEXEC` on `fd`; a descriptor that is not open (or the
/// directory listing's own, already closed) is left alone.
fn set_cloexec(fd: RawFd) {
    // SAFETY: fcntl with F_GETFD/F_SETFD only reads and sets the
    // descriptor's flags; an invalid descriptor gives EBADF, nothing else.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
            libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::io::{FdFlags, fcntl_getfd, fcntl_setfd};

    #[test]
    fn an_inheritable_descriptor_becomes_close_on_exec() {
        let file = std::fs::File::open("/dev/null").unwrap();
        let flags = fcntl_getfd(&file).unwrap();
        fcntl_setfd(&file, flags - FdFlags::CLOEXEC).unwrap();
        assert!(!fcntl_getfd(&file).unwrap().contains(FdFlags::CLOEXEC));
        close_inherited_on_exec();
        assert!(fcntl_getfd(&file).unwrap().contains(FdFlags::CLOEXEC));
    }

    #[test]
    fn only_the_standard_three_are_borrowed() {
        assert!(borrow_std(1).is_some());
        assert!(borrow_std(3).is_none() && borrow_std(-1).is_none());
    }
}
