//! The cell grid a picture is drawn from: what each cell shows (text,
//! colours, attributes, width) and where the cursor is, copied out of a
//! `vt100` screen so it can cross threads and be compared in tests.
//!
//! Two sources: the pane model clawmux keeps for a pane it watches
//! ([`Grid::from_screen`] of [`crate::pane::Pane::cells`]), and for a pane it
//! does not watch, `capture-pane -e -p` output fed to a fresh `vt100` parser
//! ([`Grid::from_capture`]).

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
    /// [`MAX_CAPTURE_BYTES`] are read.
    pub fn from_capture(capture: &[u8], cols: u16, rows: u16, cursor: Option<(u16, u16)>) -> Grid {
        let capture = &capture[..capture.len().min(MAX_CAPTURE_BYTES)];
        let mut parser = vt100::Parser::new(non_zero(rows), non_zero(cols), 0);
        // capture-pane ends rows with a bare `\n`: the terminal needs
        // `\r\n`. Its colour codes carry on from the row before (tmux
        // writes only changes), so no reset goes between rows.
        let mut fed = Vec::with_capacity(capture.len() + usize::from(rows));
        let body = capture.strip_suffix(b"\n").unwrap_or(capture);
        for (i, line) in body.split(|&b| b == b'\n').enumerate() {
            if i >= usize::from(rows) {
                break;
            }
            if i > 0 {
                fed.extend_from_slice(b"\r\n");
            }
            fed.extend_from_slice(line);
        }
        parser.process(&fed);
        let mut grid = Grid::from_screen(parser.screen());
        let first_row = rows.saturating_sub(grid.rows);
        grid.cursor = cursor.and_then(|(r, c)| {
            (r >= first_row && r < rows && c < grid.cols).then(|| (r - first_row, c))
        });
        grid
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
