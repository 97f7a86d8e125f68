//! The little terminal control the sim agent needs: raw mode for one-key
//! answers (libc termios, restored on drop) and the terminal width.

use std::os::fd::RawFd;

/// Width used when the output is not a terminal.
pub const DEFAULT_COLS: u16 = 80;

/// Raw mode on a terminal while alive; the old settings come back on drop.
pub struct RawMode {
    fd: RawFd,
    saved: libc::termios,
}

impl RawMode {
    /// Puts `fd` in raw mode; `None` if it is not a terminal (a pipe in
    /// tests), where bytes arrive unbuffered anyway.
    pub fn enter(fd: RawFd) -> Option<RawMode> {
        // SAFETY: termios is plain data; tcgetattr fills it or fails.
        let mut saved: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: `saved` is a valid termios to write into.
        if unsafe { libc::tcgetattr(fd, &mut saved) } != 0 {
            return None;
        }
        let mut raw = saved;
        // SAFETY: cfmakeraw only edits the struct it is given.
        unsafe { libc::cfmakeraw(&mut raw) };
        // Keep output processing so "\n" still returns the carriage.
        raw.c_oflag = saved.c_oflag;
        // SAFETY: `raw` is a valid termios derived from the current one.
        if unsafe { libc::tcsetattr(fd, libc::TCSANOW, &raw) } != 0 {
            return None;
        }
        Some(RawMode { fd, saved })
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        // SAFETY: restores settings read from the same fd.
        unsafe { libc::tcsetattr(self.fd, libc::TCSANOW, &self.saved) };
    }
}

/// The terminal width of `fd`, or [`DEFAULT_COLS`].
pub fn columns(fd: RawFd) -> u16 {
    // SAFETY: winsize is plain data; TIOCGWINSZ fills it or fails.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ writes a winsize into the pointer given.
    let ok = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut ws) } == 0;
    if ok && ws.ws_col > 0 {
        ws.ws_col
    } else {
        DEFAULT_COLS
    }
}
