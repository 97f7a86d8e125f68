//! The cell grid a picture is drawn from: what each cell shows (text,
//! colours, attributes, width) and where the cursor is, copied out of a
//! `vt100` screen so it can cross threads and be compared in tests.
//!
//! Two sources: the pane model clawmux keeps for a pane it watches
//! ([`Grid::from_screen`] of [`clawmux_pane::Pane::cells`]), and for a pane it
//! does not watch, `capture-pane -e -p` output fed to a fresh `vt100` parser
//! no larger than the grid, whatever the pane's size ([`Grid::from_capture`]).

/// Most columns copied into a grid: wider panes are cut on the right
/// (tmux allows 10000; a picture wider than this is unreadable on a phone
/// anyway, and the bound keeps the grid and the image small).
pub const MAX_GRID_COLS: u16 = 500;
/// Most rows copied into a grid: taller panes keep their bottom rows.
pub const MAX_GRID_ROWS: u16 = 200;
/// Most bytes of `capture-pane -e -p` output read into a grid: a full
/// 500x200 screen with a colour change on every cell is about 4 MB.
pub const MAX_CAPTURE_BYTES: usize = 8 * 1024 * 1024;

/// A terminal colour as the pane set it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Color {
    /// The terminal's default (foreground or background).
    #[default]
    Default,
    /// One of the 256 indexed colours (0–15 the ANSI ones).
    Idx(u8),
    Rgb(u8, u8, u8),
}

impl From<vt100::Color> for Color {
    fn from(c: vt100::Color) -> Self {
        match c {
            vt100::Color::Default => Color::Default,
            vt100::Color::Idx(i) => Color::Idx(i),
            vt100::Color::Rgb(r, g, b) => Color::Rgb(r, g, b),
        }
    }
}

/// One cell of the grid.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Cell {
    /// The characters shown (a base character and its combining marks);
    /// empty for a blank cell and for the right half of a wide character.
    pub text: String,
    pub fg: Color,
    pub bg: Color,
    pub bold: bool,
    pub dim: bool,
    pub underline: bool,
    pub inverse: bool,
    /// A wide character (CJK, most emoji) that also covers the next cell.
    pub wide: bool,
}

/// A screen's cells, row by row, and its cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grid {
    pub cols: u16,
    pub rows: u16,
    /// `rows * cols` cells, row-major.
    pub cells: Vec<Cell>,
    /// The cursor's (row, col), when it is shown.
    pub cursor: Option<(u16, u16)>,
    /// Whether the screen was larger than the bounds and was cut.
    pub clipped: bool,
}

impl Grid {
    /// The cell at (`row`, `col`), if inside the grid.
    pub fn cell(&self, row: u16, col: u16) -> Option<&Cell> {
        if row >= self.rows || col >= self.cols {
            return None;
        }
        self.cells
            .get(usize::from(row) * usize::from(self.cols) + usize::from(col))
    }

    /// Copies `screen`'s visible cells, at most [`MAX_GRID_COLS`] x
    /// [`MAX_GRID_ROWS`] (the left columns and the bottom rows are kept).
    pub fn from_screen(screen: &vt100::Screen) -> Grid {
        let (rows, cols) = screen.size();
        let (rows, cols) = (rows.get(), cols.get());
        let shown_cols = cols.min(MAX_GRID_COLS);
        let shown_rows = rows.min(MAX_GRID_ROWS);
        let first_row = rows - shown_rows;
        let mut cells = Vec::with_capacity(usize::from(shown_cols) * usize::from(shown_rows));
        for row in first_row..rows {
            for col in 0..shown_cols {
                cells.push(screen.cell(row, col).map(copy_cell).unwrap_or_default());
            }
        }
        let (crow, ccol) = screen.cursor_position();
        let cursor = (!screen.hide_cursor() && crow >= first_row && ccol < shown_cols)
            .then(|| (crow - first_row, ccol));
        Grid {
            cols: shown_cols,
            rows: shown_rows,
            cells,
            cursor,
            clipped: shown_cols < cols || shown_rows < rows,
        }
    }

    /// A grid from `capture-pane -e -p` output of a `cols` x `rows` pane
    /// (rows separated by `\n`, colours as SGR sequences) and its cursor
    /// (`#{cursor_y}`, `#{cursor_x}`; `None` when hidden). At most
    /// [`MAX_CAPTURE_BYTES`] are read, and the terminal model is no larger
    /// than the grid ([`MAX_GRID_COLS`] x [`MAX_GRID_ROWS`]) whatever the
    /// pane's size: a program can make its window 10000x10000 cells, a
    /// model of that size is gigabytes.
    pub fn from_capture(capture: &[u8], cols: u16, rows: u16, cursor: Option<(u16, u16)>) -> Grid {
        let (parser, first_row) = capture_model(capture, cols, rows);
        let mut grid = Grid::from_screen(parser.screen());
        grid.clipped = cols > grid.cols || rows > grid.rows;
        grid.cursor = cursor.and_then(|(r, c)| {
            (r >= first_row && r < rows && c < grid.cols).then(|| (r - first_row, c))
        });
        grid
    }
}

/// The terminal model of a capture's bottom rows and left columns, the
/// grid's size at most, and the pane row its top row is. Rows above are
/// fed their escape sequences only (colours carry on from row to row: tmux
/// writes only changes); each kept row's text is cut at the model's width
/// ([`cut_row`]), so nothing wraps.
fn capture_model(capture: &[u8], cols: u16, rows: u16) -> (vt100::Parser, u16) {
    let capture = &capture[..capture.len().min(MAX_CAPTURE_BYTES)];
    // One column past the grid when the pane is wider: a wide character
    // across the grid's edge then shows its left half, as on the pane.
    let model_cols = cols.clamp(1, MAX_GRID_COLS + 1);
    let model_rows = rows.clamp(1, MAX_GRID_ROWS);
    let first_row = rows.saturating_sub(model_rows);
    let mut parser = vt100::Parser::new(non_zero(model_rows), non_zero(model_cols), 0);
    // capture-pane ends rows with a bare `\n`: the terminal needs `\r\n`.
    let mut fed = Vec::with_capacity(capture.len() + usize::from(model_rows) * 2);
    let body = capture.strip_suffix(b"\n").unwrap_or(capture);
    for (i, line) in body.split(|&b| b == b'\n').enumerate() {
        match u16::try_from(i) {
            Ok(i) if i < first_row => cut_row(line, 0, &mut fed),
            Ok(i) if i < rows => {
                if i > first_row {
                    fed.extend_from_slice(b"\r\n");
                }
                cut_row(line, model_cols, &mut fed);
            }
            _ => break,
        }
    }
    parser.process(&fed);
    (parser, first_row)
}

/// Appends `line` (one captured row) to `out`, every escape sequence kept
/// and its text cut after `max_cols` columns as the terminal model counts
/// them (a wide character that would cross the edge is cut too, and all
/// text after it); control bytes other than ESC are dropped (a captured row
/// has none, and the rows' layout is ours).
fn cut_row(line: &[u8], max_cols: u16, out: &mut Vec<u8>) {
    let mut col: u16 = 0;
    let mut cut = max_cols == 0;
    let mut i = 0;
    while i < line.len() {
        let b = line[i];
        if b == 0x1b {
            let end = escape_end(line, i);
            out.extend_from_slice(&line[i..end]);
            i = end;
            continue;
        }
        if b < 0x20 || b == 0x7f {
            i += 1;
            continue;
        }
        let len = utf8_len(b).min(line.len() - i);
        let (width, len) = match std::str::from_utf8(&line[i..i + len]) {
            Ok(s) => (s.chars().next().map_or(1, char_width), len),
            // The model draws an invalid byte as one replacement character.
            Err(_) => (1, 1),
        };
        if !cut && col + width <= max_cols {
            out.extend_from_slice(&line[i..i + len]);
            col += width;
        } else {
            cut = true;
        }
        i += len;
    }
}

/// Columns `c` takes in the model (`vt100`'s rule: at most 2, 0 for a
/// combining mark and for a control character it does not draw, 1 for
/// another character unicode gives no width).
fn char_width(c: char) -> u16 {
    match unicode_width::UnicodeWidthChar::width(c) {
        Some(w) => u16::try_from(w.min(2)).unwrap_or(1),
        None if u32::from(c) < 256 => 0,
        None => 1,
    }
}

/// Bytes of the UTF-8 character a lead byte starts (1 for a stray byte).
fn utf8_len(lead: u8) -> usize {
    match lead {
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => 1,
    }
}

/// Where the escape sequence at `start` (an ESC) ends: a CSI at its final
/// byte, an OSC/DCS/APC/PM/SOS string at BEL or ST, any other after its
/// intermediates and final byte; the line's end for one cut short.
fn escape_end(line: &[u8], start: usize) -> usize {
    let after = |i: usize| i.min(line.len());
    match line.get(start + 1) {
        Some(b'[') => line[start + 2..]
            .iter()
            .position(|b| (0x40..=0x7e).contains(b))
            .map_or(line.len(), |p| start + 2 + p + 1),
        Some(b']' | b'P' | b'_' | b'^' | b'X') => {
            let mut i = start + 2;
            while i < line.len() {
                match line[i] {
                    0x07 => return i + 1,
                    0x1b if line.get(i + 1) == Some(&b'\\') => return i + 2,
                    _ => i += 1,
                }
            }
            line.len()
        }
        Some(_) => line[start + 1..]
            .iter()
            .position(|b| !(0x20..=0x2f).contains(b))
            .map_or(line.len(), |p| after(start + 1 + p + 1)),
        None => line.len(),
    }
}

fn copy_cell(c: &vt100::Cell) -> Cell {
    Cell {
        text: c.contents().to_string(),
        fg: c.fgcolor().into(),
        bg: c.bgcolor().into(),
        bold: c.bold(),
        dim: c.dim(),
        underline: c.underline(),
        inverse: c.inverse(),
        wide: c.is_wide(),
    }
}

/// Terminal sizes are at least one cell.
fn non_zero(n: u16) -> std::num::NonZeroU16 {
    std::num::NonZeroU16::new(n).unwrap_or(std::num::NonZeroU16::MIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(cols: u16, rows: u16, bytes: &[u8]) -> Grid {
        let mut p = vt100::Parser::new(non_zero(rows), non_zero(cols), 0);
        p.process(bytes);
        Grid::from_screen(p.screen())
    }

    #[test]
    fn copies_colours_attributes_and_wide_cells() {
        let g = grid(
            10,
            2,
            "\x1b[1;31mR\x1b[0m\x1b[7mV\x1b[0m中\x1b[38;5;200mx\x1b[38;2;1;2;3my".as_bytes(),
        );
        let c = |col| g.cell(0, col).unwrap();
        assert_eq!(
            (c(0).text.as_str(), c(0).fg, c(0).bold),
            ("R", Color::Idx(1), true)
        );
        assert!(c(1).inverse);
        assert!(c(2).wide && c(2).text == "中");
        assert_eq!(c(3).text, "", "the right half of a wide char is empty");
        assert_eq!(c(4).fg, Color::Idx(200));
        assert_eq!(c(5).fg, Color::Rgb(1, 2, 3));
        assert_eq!(g.cursor, Some((0, 6)));
    }

    #[test]
    fn hidden_cursor_is_none_and_big_screens_are_cut() {
        let g = grid(10, 2, b"ab\x1b[?25l");
        assert_eq!(g.cursor, None);
        let big = grid(MAX_GRID_COLS + 5, MAX_GRID_ROWS + 3, b"x");
        assert_eq!((big.cols, big.rows), (MAX_GRID_COLS, MAX_GRID_ROWS));
        assert!(big.clipped);
        assert_eq!(
            big.cells.len(),
            usize::from(MAX_GRID_COLS) * usize::from(MAX_GRID_ROWS)
        );
        // The bottom rows are kept: the top row (with the cursor) is gone.
        assert_eq!(big.cursor, None);
    }

    /// What `from_capture` gave before its model was bounded: a model of
    /// the pane's whole size, then cut. The oracle for the bounded one.
    fn whole_model_grid(capture: &[u8], cols: u16, rows: u16) -> Grid {
        let mut parser = vt100::Parser::new(non_zero(rows), non_zero(cols), 0);
        let body = capture.strip_suffix(b"\n").unwrap_or(capture);
        let lines: Vec<&[u8]> = body.split(|&b| b == b'\n').collect();
        parser.process(&lines.join(&b"\r\n"[..]));
        Grid::from_screen(parser.screen())
    }

    /// A pane larger than the grid: colours set in rows above the kept
    /// ones carry on, rows longer than the grid are cut without wrapping,
    /// a wide character across the grid's edge shows as on the pane, and
    /// the result is the whole model's, cell for cell.
    #[test]
    fn a_large_pane_s_capture_is_the_whole_model_s_cut() {
        let (cols, rows) = (MAX_GRID_COLS + 20, MAX_GRID_ROWS + 30);
        let mut capture = Vec::new();
        for row in 0..rows {
            match row {
                0 => capture.extend_from_slice(b"\x1b[1;32mtop row sets green"),
                5 => capture.extend_from_slice(
                    "\x1b]8;;http://x\x07link\x1b]8;;\x1b\\ é\u{301}".as_bytes(),
                ),
                r if r == rows - 3 => {
                    capture.extend_from_slice(&vec![b'a'; usize::from(MAX_GRID_COLS) - 1]);
                    capture.extend_from_slice("中文\x1b[44mblue edge".as_bytes());
                }
                r if r == rows - 2 => {
                    capture.extend_from_slice(&vec![b'b'; usize::from(MAX_GRID_COLS)]);
                    capture.extend_from_slice("中\x1b[0mreset".as_bytes());
                }
                r if r == rows - 1 => capture.extend_from_slice(b"last \x1b[31mred"),
                r => capture.extend_from_slice(
                    format!("row {r} {}", "x".repeat(usize::from(r))).as_bytes(),
                ),
            }
            capture.push(b'\n');
        }
        let cut = Grid::from_capture(&capture, cols, rows, Some((rows - 1, 3)));
        let mut whole = whole_model_grid(&capture, cols, rows);
        whole.cursor = Some((MAX_GRID_ROWS - 1, 3));
        assert_eq!((cut.cols, cut.rows), (MAX_GRID_COLS, MAX_GRID_ROWS));
        assert!(cut.clipped);
        for row in 0..cut.rows {
            for col in 0..cut.cols {
                assert_eq!(cut.cell(row, col), whole.cell(row, col), "({row}, {col})");
            }
        }
        assert_eq!(cut, whole);
        let edge = cut.cell(MAX_GRID_ROWS - 3, MAX_GRID_COLS - 1).unwrap();
        assert!(edge.wide && edge.text == "中", "{edge:?}");
        let green = cut.cell(0, 0).unwrap();
        assert_eq!(green.fg, Color::Idx(2), "carried from a row above the grid");
    }

    /// Whatever the pane's size (tmux allows 10000x10000, and a program
    /// can resize its own window), the model is no larger than the grid.
    #[test]
    fn the_model_is_bounded_by_the_grid_whatever_the_pane_s_size() {
        let mut capture = b"\n".repeat(9999);
        capture.extend_from_slice(b"bottom\n");
        for (cols, rows) in [(10000, 10000), (10000, 2000), (u16::MAX, u16::MAX), (0, 0)] {
            let (model, first_row) = capture_model(&capture, cols, rows);
            let (model_rows, model_cols) = model.screen().size();
            assert!(model_rows.get() <= MAX_GRID_ROWS && model_cols.get() <= MAX_GRID_COLS + 1);
            assert_eq!(first_row, rows.saturating_sub(model_rows.get()));
        }
        let g = Grid::from_capture(&capture, 10000, 10000, Some((9999, 6)));
        assert_eq!((g.cols, g.rows), (MAX_GRID_COLS, MAX_GRID_ROWS));
        assert_eq!(g.cell(MAX_GRID_ROWS - 1, 0).unwrap().text, "b");
        assert_eq!(g.cursor, Some((MAX_GRID_ROWS - 1, 6)));
        assert!(g.clipped);
    }

    #[test]
    fn escape_sequences_are_kept_whole_and_text_cut_by_columns() {
        let mut out = Vec::new();
        cut_row(
            "ab\x1b[31mcd中e\x1b[0m\x1b]0;t\x07\x08f".as_bytes(),
            5,
            &mut out,
        );
        assert_eq!(out, "ab\x1b[31mcd\x1b[0m\x1b]0;t\x07".as_bytes());
        out.clear();
        cut_row(b"text\x1b[1mmore\x1b(B", 0, &mut out);
        assert_eq!(out, b"\x1b[1m\x1b(B");
        out.clear();
        cut_row(b"x\x1b[3", 9, &mut out);
        assert_eq!(out, b"x\x1b[3", "a sequence cut short is kept as it is");
    }

    #[test]
    fn capture_rows_start_at_the_left_and_carry_colours_on() {
        let capture = b"\x1b[31mred\n\x1b[44mblue bg\x1b[0m\nplain\n";
        let g = Grid::from_capture(capture, 20, 4, Some((2, 5)));
        assert_eq!(g.cell(0, 0).unwrap().fg, Color::Idx(1));
        assert_eq!(g.cell(1, 0).unwrap().text, "b");
        assert_eq!(g.cell(1, 0).unwrap().fg, Color::Idx(1), "carried on");
        assert_eq!(g.cell(1, 0).unwrap().bg, Color::Idx(4));
        assert_eq!(g.cell(2, 0).unwrap().bg, Color::Default);
        assert_eq!(g.cursor, Some((2, 5)));
        assert_eq!(Grid::from_capture(capture, 20, 4, None).cursor, None);
    }
}
