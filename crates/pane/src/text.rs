//! Clean text from terminal bytes: a `vte::Perform` that keeps a small
//! editable "live" region (the rows a program can still redraw with CR,
//! backspace, erase-line and cursor-up) above a bounded log of final lines.
//!
//! A line is *finished* when the cursor leaves it (CR, LF, cursor movement)
//! and its text differs from the last time it was finished, so a spinner
//! redrawn in place, or a region re-rendered unchanged, is reported once per
//! distinct content instead of piling up.

use std::collections::VecDeque;

use vte::{Params, Perform};

/// Longest logical line kept, in chars: a program that never prints a
/// newline must not grow memory without bound; past this the line is broken
/// as if the terminal had wrapped it.
pub const MAX_LINE_CHARS: usize = 16 * 1024;

/// Heap cost of a line in the log besides its text: the `String` header in
/// the queue and the allocator's bookkeeping.
const LINE_OVERHEAD_BYTES: usize = 40;

fn held_bytes(line: &str) -> usize {
    line.len() + LINE_OVERHEAD_BYTES
}

/// Tab stops every 8 columns, as in every terminal tmux emulates.
const TAB_WIDTH: usize = 8;

/// One row of the live region.
#[derive(Default)]
struct LiveLine {
    cells: Vec<char>,
    /// The text this row had when it was last reported as finished.
    reported: Option<String>,
}

impl LiveLine {
    fn text(&self) -> String {
        let s: String = self.cells.iter().collect();
        s.trim_end().to_owned()
    }
}

/// The text model fed by [`vte::Parser`]: live rows plus the final log.
pub(crate) struct TextModel {
    live_rows: usize,
    scrollback_bytes: usize,
    /// Final lines, oldest first; `log_bytes` is what they hold on the heap.
    log: VecDeque<String>,
    log_bytes: usize,
    /// Absolute number of the first line in `log` (lines dropped before it
    /// were evicted by the scrollback bound).
    log_first: u64,
    live: VecDeque<LiveLine>,
    row: usize,
    col: usize,
    saved: (usize, usize),
    /// Lines finished since the caller last drained them.
    pub(crate) finished: Vec<String>,
    /// Titles, state sequences and notifications met since the caller last
    /// drained them, at most [`super::signal::MAX_SIGNALS`] (oldest dropped).
    pub(crate) signals: VecDeque<super::signal::Signal>,
}

impl TextModel {
    pub(crate) fn new(live_rows: usize, scrollback_bytes: usize) -> Self {
        let mut live = VecDeque::new();
        live.push_back(LiveLine::default());
        TextModel {
            live_rows: live_rows.max(1),
            scrollback_bytes,
            log: VecDeque::new(),
            log_bytes: 0,
            log_first: 0,
            live,
            row: 0,
            col: 0,
            saved: (0, 0),
            finished: Vec::new(),
            signals: VecDeque::new(),
        }
    }

    /// Absolute line number of the cursor row.
    pub(crate) fn cursor_line(&self) -> u64 {
        self.log_first + self.log.len() as u64 + self.row as u64
    }

    /// Absolute number of the oldest line still held.
    pub(crate) fn first_line(&self) -> u64 {
        self.log_first
    }

    /// Text of every held line numbered `from` or later, `\n`-separated,
    /// trailing blank lines dropped.
    pub(crate) fn text_from(&self, from: u64) -> String {
        let skip = from.saturating_sub(self.log_first);
        let log = self.log.iter().map(|l| l.to_owned());
        let live = self.live.iter().map(LiveLine::text);
        let lines: Vec<String> = log
            .chain(live)
            .skip(usize::try_from(skip).unwrap_or(usize::MAX))
            .collect();
        lines.join("\n").trim_end().to_owned()
    }

    fn line(&mut self) -> &mut LiveLine {
        &mut self.live[self.row]
    }

    /// Reports the cursor row as finished if its text changed.
    fn finish_row(&mut self) {
        let text = self.live[self.row].text();
        let line = &mut self.live[self.row];
        if line.reported.as_deref() != Some(text.as_str()) && !text.is_empty() {
            line.reported = Some(text.clone());
            self.finished.push(text);
        } else if text.is_empty() {
            line.reported = None;
        }
    }

    fn move_to_row(&mut self, row: usize) {
        // A terminal stops at its bottom row: a huge cursor-down must not
        // allocate a huge live region.
        let row = row.min(self.row + self.live_rows);
        if row != self.row {
            self.finish_row();
        }
        while row >= self.live.len() {
            self.live.push_back(LiveLine::default());
        }
        self.row = row;
        while self.live.len() > self.live_rows && self.row > 0 {
            self.commit_oldest();
        }
    }

    fn commit_oldest(&mut self) {
        if let Some(line) = self.live.pop_front() {
            self.row -= 1;
            self.push_log(line.text());
        }
    }

    fn push_log(&mut self, mut text: String) {
        // Count what the line really holds on the heap, so the bound is
        // on memory, not just on characters.
        text.shrink_to_fit();
        self.log_bytes += held_bytes(&text);
        self.log.push_back(text);
        while self.log_bytes > self.scrollback_bytes {
            let Some(old) = self.log.pop_front() else {
                break;
            };
            self.log_bytes -= held_bytes(&old);
            self.log_first += 1;
        }
    }

    fn newline(&mut self) {
        self.move_to_row(self.row + 1);
        self.col = 0;
    }

    fn erase_in_line(&mut self, mode: u16) {
        let col = self.col;
        let line = self.line();
        match mode {
            0 => line.cells.truncate(col),
            1 => {
                let end = (col + 1).min(line.cells.len());
                line.cells[..end].fill(' ');
            }
            _ => line.cells.clear(),
        }
    }

    fn erase_in_display(&mut self, mode: u16) {
        match mode {
            0 => {
                self.erase_in_line(0);
                self.live.truncate(self.row + 1);
            }
            1 => {
                for line in self.live.iter_mut().take(self.row) {
                    line.cells.clear();
                }
                self.erase_in_line(1);
            }
            _ => {
                // A cleared screen: what was on it is final.
                self.finish_row();
                while let Some(line) = self.live.pop_front() {
                    let text = line.text();
                    if !text.is_empty() {
                        self.push_log(text);
                    }
                }
                self.live.push_back(LiveLine::default());
                self.row = 0;
                self.col = 0;
            }
        }
    }
}

/// First CSI parameter, or `default` when absent or zero.
fn arg(params: &Params, index: usize, default: u16) -> u16 {
    match params.iter().nth(index).and_then(|p| p.first().copied()) {
        Some(0) | None => default,
        Some(n) => n,
    }
}

impl Perform for TextModel {
    fn print(&mut self, c: char) {
        if self.col >= MAX_LINE_CHARS {
            self.newline();
        }
        let col = self.col;
        let line = self.line();
        if col < line.cells.len() {
            line.cells[col] = c;
        } else {
            line.cells.resize(col, ' ');
            line.cells.push(c);
        }
        self.col += 1;
    }

    fn execute(&mut self, byte: u8) {
        match byte {
            b'\n' | 0x0b | 0x0c => self.newline(),
            b'\r' => {
                self.finish_row();
                self.col = 0;
            }
            0x08 => self.col = self.col.saturating_sub(1),
            b'\t' => {
                let next = (self.col / TAB_WIDTH + 1) * TAB_WIDTH;
                for _ in self.col..next {
                    self.print(' ');
                }
            }
            _ => {}
        }
    }

    fn csi_dispatch(&mut self, params: &Params, intermediates: &[u8], _ignore: bool, action: char) {
        if !intermediates.is_empty() {
            return; // private modes (`?2004h`, …) do not move text
        }
        let n = usize::from(arg(params, 0, 1));
        match action {
            'A' => self.move_to_row(self.row.saturating_sub(n)),
            'B' | 'e' => self.move_to_row(self.row + n),
            'E' => {
                self.move_to_row(self.row + n);
                self.col = 0;
            }
            'F' => {
                self.move_to_row(self.row.saturating_sub(n));
                self.col = 0;
            }
            'C' | 'a' => self.col = (self.col + n).min(MAX_LINE_CHARS),
            'D' => self.col = self.col.saturating_sub(n),
            'G' | '`' => self.col = (n - 1).min(MAX_LINE_CHARS),
            'H' | 'f' => {
                // Absolute rows are taken relative to the live region, which
                // ends where the output does: good enough for redraws.
                let row = usize::from(arg(params, 0, 1)) - 1;
                let base = self.live.len().saturating_sub(self.live_rows);
                self.move_to_row((base + row).min(self.live_rows + base));
                self.col = (usize::from(arg(params, 1, 1)) - 1).min(MAX_LINE_CHARS);
            }
            'K' => self.erase_in_line(arg(params, 0, 0)),
            'J' => self.erase_in_display(arg(params, 0, 0)),
            'X' => {
                let col = self.col;
                let line = self.line();
                let end = (col + n).min(line.cells.len());
                if col < end {
                    line.cells[col..end].fill(' ');
                }
            }
            'P' => {
                let col = self.col;
                let line = self.line();
                if col < line.cells.len() {
                    let end = (col + n).min(line.cells.len());
                    line.cells.drain(col..end);
                }
            }
            's' => self.saved = (self.row, self.col),
            'u' => {
                let (row, col) = self.saved;
                self.move_to_row(row.min(self.live.len().saturating_sub(1)));
                self.col = col;
            }
            _ => {}
        }
    }

    fn osc_dispatch(&mut self, params: &[&[u8]], _bell_terminated: bool) {
        if let Some(signal) = super::signal::parse(params) {
            if self.signals.len() == super::signal::MAX_SIGNALS {
                self.signals.pop_front();
            }
            self.signals.push_back(signal);
        }
    }

    fn esc_dispatch(&mut self, intermediates: &[u8], _ignore: bool, byte: u8) {
        if !intermediates.is_empty() {
            return;
        }
        match byte {
            b'7' => self.saved = (self.row, self.col),
            b'8' => {
                let (row, col) = self.saved;
                self.move_to_row(row.min(self.live.len().saturating_sub(1)));
                self.col = col;
            }
            b'M' => self.move_to_row(self.row.saturating_sub(1)),
            b'D' => self.move_to_row(self.row + 1),
            b'E' => self.newline(),
            _ => {}
        }
    }
}
