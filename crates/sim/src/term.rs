//! The little terminal control the sim agent needs: raw mode for one-key
//! answers (termios, restored on drop) and the terminal width.

use std::os::fd::RawFd;

use rustix::termios::{OptionalActions, Termios, tcgetattr, tcgetwinsize, tcsetattr};

use clawmux_fds::borrow_std;

/// Width used when the output is not a terminal.
pub const DEFAULT_COLS: u16 = 80;

/// Raw mode on a terminal while alive; the old settings come back on drop.
pub(crate) struct RawMode {
    fd: RawFd,
    saved: Termios,
}

impl RawMode {
    /// Puts `fd` in raw mode; `None` if it is not a terminal (a pipe in
    /// tests), where bytes arrive unbuffered anyway.
    pub(crate) fn enter(fd: RawFd) -> Option<RawMode> {
        let saved = tcgetattr(borrow_std(fd)?).ok()?;
        let mut raw = saved.clone();
        raw.make_raw();
        // Keep output processing so "\n" still returns the carriage.
        raw.output_modes = saved.output_modes;
        tcsetattr(borrow_std(fd)?, OptionalActions::Now, &raw).ok()?;
        Some(RawMode { fd, saved })
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        if let Some(fd) = borrow_std(self.fd) {
            let _ = tcsetattr(fd, OptionalActions::Now, &self.saved);
        }
    }
}

/// The terminal width of `fd`, or [`DEFAULT_COLS`].
pub(crate) fn columns(fd: RawFd) -> u16 {
    borrow_std(fd)
        .and_then(|fd| tcgetwinsize(fd).ok())
        .map(|ws| ws.ws_col)
        .filter(|cols| *cols > 0)
        .unwrap_or(DEFAULT_COLS)
}
