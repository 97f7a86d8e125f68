//! The renderer checked on decoded pixels: each test draws a screen fed
//! with escape sequences, decodes the PNG and looks at cells.

use super::palette::{DEFAULT_BG, DEFAULT_FG, indexed};
use super::*;

fn fonts() -> std::sync::Arc<Fonts> {
    fonts::shared(&FontPaths::default())
        .unwrap_or_else(|e| panic!("{e} (CI installs {})", fonts::MONO_PACKAGE))
}

/// A `cols` x `rows` screen fed `bytes`, drawn and decoded.
struct Shot {
    pic: Picture,
    rgb: Vec<u8>,
}

fn shot(cols: u16, rows: u16, bytes: &[u8]) -> Shot {
    let mut p = vt100::Parser::new(
        std::num::NonZeroU16::new(rows).unwrap(),
        std::num::NonZeroU16::new(cols).unwrap(),
        0,
    );
    p.process(bytes);
    let pic = render(&Grid::from_screen(p.screen()), &fonts()).unwrap();
    let decoder = png::Decoder::new(std::io::Cursor::new(pic.png.clone()));
    let mut reader = decoder.read_info().unwrap();
    let mut rgb = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut rgb).unwrap();
    assert_eq!((info.width, info.height), (pic.width, pic.height));
    assert_eq!(info.color_type, png::ColorType::Rgb);
    rgb.truncate(info.buffer_size());
    Shot { pic, rgb }
}

impl Shot {
    fn px(&self, x: u32, y: u32) -> [u8; 3] {
        let i = ((y * self.pic.width + x) * 3) as usize;
        [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
    }

    /// The pixel at the middle of cell (row, col).
    fn centre(&self, row: u32, col: u32) -> [u8; 3] {
        let (w, h) = (self.pic.cell_width, self.pic.cell_height);
        self.px(col * w + w / 2, row * h + h / 2)
    }

    /// How many pixels of cell (row, col) differ from `bg` (its ink).
    fn ink(&self, row: u32, col: u32, bg: [u8; 3]) -> usize {
        let (w, h) = (self.pic.cell_width, self.pic.cell_height);
        let mut n = 0;
        for y in row * h..(row + 1) * h {
            for x in col * w..(col + 1) * w {
                n += usize::from(self.px(x, y) != bg);
            }
        }
        n
    }
}

#[test]
fn picture_is_the_grid_size_in_cells() {
    let s = shot(40, 5, b"hello");
    assert!(
        s.pic.cell_width >= 6 && s.pic.cell_height >= 10,
        "{:?}",
        (s.pic.cell_width, s.pic.cell_height)
    );
    assert_eq!(s.pic.width, 40 * s.pic.cell_width);
    assert_eq!(s.pic.height, 5 * s.pic.cell_height);
    assert!(s.ink(0, 0, DEFAULT_BG) > 0, "h drawn");
    assert_eq!(s.ink(1, 0, DEFAULT_BG), 0, "empty row stays background");
}

#[test]
fn background_colours_16_256_and_rgb() {
    let s = shot(
        10,
        2,
        b"\x1b[41m \x1b[48;5;21m \x1b[48;2;10;200;30m \x1b[0m ",
    );
    assert_eq!(s.centre(0, 0), indexed(1), "a red cell is red");
    assert_eq!(s.centre(0, 1), [0, 0, 255]);
    assert_eq!(s.centre(0, 2), [10, 200, 30]);
    assert_eq!(s.centre(0, 3), DEFAULT_BG);
}

#[test]
fn text_takes_its_foreground_colour() {
    // A full block covers its cell's middle.
    let s = shot(10, 2, "\x1b[31m█\x1b[38;5;46m█\x1b[0m█".as_bytes());
    assert_eq!(s.centre(0, 0), indexed(1));
    assert_eq!(s.centre(0, 1), indexed(46));
    assert_eq!(s.centre(0, 2), DEFAULT_FG);
}

#[test]
fn reverse_swaps_foreground_and_background() {
    let s = shot(10, 2, b"\x1b[7m \x1b[0m\x1b[7;31;42m \x1b[0m");
    assert_eq!(s.centre(0, 0), DEFAULT_FG, "default colours swapped");
    assert_eq!(
        s.centre(0, 1),
        indexed(1),
        "red text on green becomes a red cell"
    );
}

#[test]
fn wide_characters_span_two_cells() {
    let s = shot(10, 2, "\x1b[44m中\x1b[0mx".as_bytes());
    let blue = indexed(4);
    // The glyph is in both halves, the background under both.
    assert!(s.ink(0, 0, blue) > 0 && s.ink(0, 1, blue) > 0);
    let (w, h) = (s.pic.cell_width, s.pic.cell_height);
    assert_eq!(
        s.px(w, h - 1),
        blue,
        "the right half has the wide char's background"
    );
    assert_eq!(
        s.px(2 * w + w - 1, h - 1),
        DEFAULT_BG,
        "x, the next char, is in cell 2"
    );
    assert!(s.ink(0, 2, DEFAULT_BG) > 0);
    assert!(
        s.ink(0, 1, blue) * 3 > s.ink(0, 0, blue),
        "the glyph is centred over both cells"
    );
}

#[test]
fn emoji_are_wide_and_drawn() {
    let s = shot(10, 2, "😀x".as_bytes());
    assert!(s.ink(0, 0, DEFAULT_BG) + s.ink(0, 1, DEFAULT_BG) > 0);
    assert!(s.ink(0, 2, DEFAULT_BG) > 0, "x after the emoji's two cells");
}

#[test]
fn cursor_is_a_block_and_hidden_cursor_is_not_drawn() {
    let s = shot(10, 2, b"ab");
    assert_eq!(s.centre(0, 2), DEFAULT_FG, "block cursor after `ab`");
    assert_eq!(s.centre(0, 3), DEFAULT_BG);
    let hidden = shot(10, 2, b"ab\x1b[?25l");
    assert_eq!(hidden.centre(0, 2), DEFAULT_BG);
    let moved = shot(10, 3, b"ab\x1b[2;5H");
    assert_eq!(moved.centre(1, 4), DEFAULT_FG, "cursor at row 2, column 5");
}

#[test]
fn bold_has_more_ink_and_dim_is_fainter() {
    let s = shot(10, 2, b"H\x1b[1mH\x1b[0m\x1b[2m\xe2\x96\x88\x1b[0m");
    assert!(s.ink(0, 1, DEFAULT_BG) > s.ink(0, 0, DEFAULT_BG));
    let dim = s.centre(0, 2);
    assert!(dim[0] < DEFAULT_FG[0] && dim[0] > DEFAULT_BG[0], "{dim:?}");
}

#[test]
fn a_character_no_font_has_is_a_box() {
    // A private-use character: no font draws it.
    let s = shot(10, 2, "\u{10FFFD}".as_bytes());
    let (w, h) = (s.pic.cell_width, s.pic.cell_height);
    assert_eq!(s.px(1, h / 2), DEFAULT_FG, "left edge of the box");
    assert_eq!(s.px(w / 2, h / 2), DEFAULT_BG, "hollow");
}

#[test]
fn a_wide_pane_shrinks_to_the_side_limit() {
    let s = shot(500, 3, b"x");
    assert!(s.pic.width <= MAX_IMAGE_SIDE_PX, "{}", s.pic.width);
    assert_eq!(s.pic.width, 500 * s.pic.cell_width);
    assert!(s.pic.png.len() <= MAX_PNG_BYTES);
}

#[test]
fn a_grid_past_the_bounds_is_refused_not_drawn() {
    let grid = Grid {
        cols: 5000,
        rows: 1,
        cells: Vec::new(),
        cursor: None,
        clipped: false,
    };
    assert!(matches!(
        render(&grid, &fonts()),
        Err(RenderError::TooWide { .. })
    ));
}

#[test]
fn a_captured_screen_draws_like_a_watched_one() {
    let bytes = b"\x1b[41mred\x1b[0m plain";
    let mut p = vt100::Parser::new(
        std::num::NonZeroU16::new(2).unwrap(),
        std::num::NonZeroU16::new(20).unwrap(),
        0,
    );
    p.process(bytes);
    let watched = Grid::from_screen(p.screen());
    let captured = Grid::from_capture(bytes, 20, 2, Some((0, 9)));
    assert_eq!(watched, captured);
    let fonts = fonts();
    assert_eq!(render(&watched, &fonts), render(&captured, &fonts));
}
