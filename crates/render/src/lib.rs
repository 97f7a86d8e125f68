//! Pictures of terminal screens: a pane's cell grid drawn as a PNG, for
//! chats where people would rather look than read a 200-column dump.
//!
//! Each cell is a fixed box (the monospace font's advance by its line
//! height); a wide character (CJK, most emoji) fills two. Colours are
//! xterm's (16, 256 and RGB), on a dark default; reverse video swaps a
//! cell's colours, dim halves its text colour toward the background, bold
//! is drawn twice a pixel apart (one font file per face is enough), and a
//! shown cursor is a block that inverts its cell. A character no font has
//! is a box. Glyphs come from the machine's fonts ([`fonts`]).
//!
//! Memory is bounded by the grid ([`grid::MAX_GRID_COLS`] x
//! [`grid::MAX_GRID_ROWS`]), the image side ([`MAX_IMAGE_SIDE_PX`]: the
//! font shrinks to fit, down to [`MIN_FONT_PX`]) and the PNG size
//! ([`MAX_PNG_BYTES`], Feishu's image limit).

#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub mod fonts;
pub mod grid;
mod palette;

use std::collections::HashMap;

use ab_glyph::{Font, FontVec, GlyphId, PxScale, ScaleFont, point};

pub use fonts::{FontError, FontPaths, Fonts};
pub use grid::Grid;
use palette::Rgb;

/// The font size cells are drawn at (pixels from descent to ascent): a
/// 160-column pane comes out about 1600 pixels wide, what Feishu
/// recommends as the largest clear width.
pub const FONT_PX: f32 = 18.0;
/// Smallest font size a wide pane is shrunk to.
pub const MIN_FONT_PX: f32 = 6.0;
/// Longest side of a picture, in pixels: far under Feishu's 12000, and
/// the RGB buffer stays under 50 MB.
pub const MAX_IMAGE_SIDE_PX: u32 = 4000;
/// Largest PNG made: Feishu's limit for `im/v1/images` (10 MB).
pub const MAX_PNG_BYTES: usize = 10 * 1024 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenderError {
    #[error("{0}")]
    Font(#[from] FontError),
    #[error("the picture would be {0} bytes, over the {MAX_PNG_BYTES}-byte limit")]
    TooLarge(usize),
    #[error(
        "the picture would be {width}x{height} pixels, over {MAX_IMAGE_SIDE_PX} a side (a grid of at most {} x {} cells fits)",
        grid::MAX_GRID_COLS,
        grid::MAX_GRID_ROWS
    )]
    TooWide { width: u32, height: u32 },
    #[error("PNG encoding failed: {0}")]
    Encode(String),
}

/// A drawn screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picture {
    pub png: Vec<u8>,
    pub width: u32,
    pub height: u32,
    /// One cell's size in pixels: `width` is `cols * cell_width`.
    pub cell_width: u32,
    pub cell_height: u32,
}

/// Draws `grid` with `fonts` as a PNG.
pub fn render(grid: &Grid, fonts: &Fonts) -> Result<Picture, RenderError> {
    let m = Metrics::fit(fonts.mono(), grid.cols, grid.rows);
    let width = u32::from(grid.cols).saturating_mul(m.cell_w);
    let height = u32::from(grid.rows).saturating_mul(m.cell_h);
    // A grid made by hand, or a font with odd metrics, could ask for more:
    // the pixel buffer is never made past the bound.
    if width > MAX_IMAGE_SIDE_PX || height > MAX_IMAGE_SIDE_PX {
        return Err(RenderError::TooWide { width, height });
    }
    let mut canvas = Canvas::new(width, height);
    let colours = cell_colours(grid);
    for row in 0..grid.rows {
        for col in 0..grid.cols {
            let (_, bg) = colours[index(grid, row, col)];
            canvas.fill(m.cell_rect(row, col, 1), bg);
        }
    }
    let mut cache = GlyphCache::default();
    for row in 0..grid.rows {
        for col in 0..grid.cols {
            let Some(cell) = grid.cell(row, col) else {
                continue;
            };
            let (fg, _) = colours[index(grid, row, col)];
            let span = if cell.wide { 2 } else { 1 };
            let slot = m.cell_rect(row, col, span);
            for c in cell.text.chars() {
                draw_char(&mut canvas, &mut cache, fonts, &m, slot, c, fg, cell.bold);
            }
            if cell.underline {
                let y = slot.y + m.baseline + 1;
                canvas.fill(Rect { y, h: 1, ..slot }.clip_to(slot), fg);
            }
        }
    }
    let png = encode(&canvas)?;
    Ok(Picture {
        png,
        width,
        height,
        cell_width: m.cell_w,
        cell_height: m.cell_h,
    })
}

fn index(grid: &Grid, row: u16, col: u16) -> usize {
    usize::from(row) * usize::from(grid.cols) + usize::from(col)
}

/// Each cell's (text, background) colour: defaults resolved, reverse and
/// the cursor applied, dim text; the right half of a wide character takes
/// its left half's.
fn cell_colours(grid: &Grid) -> Vec<(Rgb, Rgb)> {
    let mut out = Vec::with_capacity(grid.cells.len());
    for row in 0..grid.rows {
        let mut left_wide: Option<(Rgb, Rgb)> = None;
        for col in 0..grid.cols {
            if let Some(pair) = left_wide.take() {
                out.push(pair);
                continue;
            }
            let cell = grid.cell(row, col).cloned().unwrap_or_default();
            let mut fg = palette::resolve(cell.fg, palette::DEFAULT_FG);
            let mut bg = palette::resolve(cell.bg, palette::DEFAULT_BG);
            if cell.inverse {
                std::mem::swap(&mut fg, &mut bg);
            }
            if grid.cursor == Some((row, col)) {
                std::mem::swap(&mut fg, &mut bg);
            }
            if cell.dim {
                fg = palette::dimmed(fg, bg);
            }
            if cell.wide {
                left_wide = Some((fg, bg));
            }
            out.push((fg, bg));
        }
    }
    out
}

/// Cell size and baseline for a grid, the font shrunk so the picture fits
/// [`MAX_IMAGE_SIDE_PX`].
struct Metrics {
    /// The monospace font's size (height scale).
    px: f32,
    /// Its em in pixels: fallback fonts are drawn at the same em.
    em: f32,
    cell_w: u32,
    cell_h: u32,
    /// From a cell's top to the baseline.
    baseline: u32,
}

impl Metrics {
    fn at(mono: &FontVec, px: f32) -> Metrics {
        let scaled = mono.as_scaled(PxScale::from(px));
        let cell_w = scaled.h_advance(mono.glyph_id('M')).round().max(1.0) as u32;
        let cell_h = (scaled.ascent() - scaled.descent() + scaled.line_gap())
            .ceil()
            .max(1.0) as u32;
        let upem = mono.units_per_em().unwrap_or(1000.0);
        Metrics {
            px,
            em: px * upem / mono.height_unscaled().max(1.0),
            cell_w,
            cell_h,
            baseline: (scaled.ascent() + scaled.line_gap() / 2.0).round().max(0.0) as u32,
        }
    }

    fn fit(mono: &FontVec, cols: u16, rows: u16) -> Metrics {
        let mut m = Metrics::at(mono, FONT_PX);
        for _ in 0..4 {
            let w = u32::from(cols) * m.cell_w;
            let h = u32::from(rows) * m.cell_h;
            let over = w.max(h);
            if over <= MAX_IMAGE_SIDE_PX || m.px <= MIN_FONT_PX {
                break;
            }
            let px = (m.px * MAX_IMAGE_SIDE_PX as f32 / over as f32 - 0.5).max(MIN_FONT_PX);
            m = Metrics::at(mono, px);
        }
        m
    }

    fn cell_rect(&self, row: u16, col: u16, span: u32) -> Rect {
        Rect {
            x: u32::from(col) * self.cell_w,
            y: u32::from(row) * self.cell_h,
            w: self.cell_w * span,
            h: self.cell_h,
        }
    }

    /// The size `font` is drawn at so its em matches the monospace font's.
    fn px_for(&self, font: &FontVec) -> f32 {
        let upem = font.units_per_em().unwrap_or(1000.0);
        self.em * font.height_unscaled() / upem.max(1.0)
    }
}

#[derive(Debug, Clone, Copy)]
struct Rect {
    x: u32,
    y: u32,
    w: u32,
    h: u32,
}

impl Rect {
    fn clip_to(self, outer: Rect) -> Rect {
        let x = self.x.max(outer.x);
        let y = self.y.max(outer.y);
        let right = (self.x + self.w).min(outer.x + outer.w);
        let bottom = (self.y + self.h).min(outer.y + outer.h);
        Rect {
            x,
            y,
            w: right.saturating_sub(x),
            h: bottom.saturating_sub(y),
        }
    }
}

/// An RGB pixel buffer.
struct Canvas {
    width: u32,
    height: u32,
    pixels: Vec<u8>,
}

impl Canvas {
    fn new(width: u32, height: u32) -> Canvas {
        Canvas {
            width,
            height,
            pixels: vec![0; width as usize * height as usize * 3],
        }
    }

    fn fill(&mut self, r: Rect, c: Rgb) {
        for y in r.y..(r.y + r.h).min(self.height) {
            for x in r.x..(r.x + r.w).min(self.width) {
                let i = (y as usize * self.width as usize + x as usize) * 3;
                self.pixels[i..i + 3].copy_from_slice(&c);
            }
        }
    }

    /// Blends `c` over the pixel at (x, y) by `coverage` (0..=1), if it is
    /// inside `clip`.
    fn blend(&mut self, x: i64, y: i64, c: Rgb, coverage: f32, clip: Rect) {
        let inside = x >= i64::from(clip.x)
            && y >= i64::from(clip.y)
            && x < i64::from(clip.x + clip.w).min(i64::from(self.width))
            && y < i64::from(clip.y + clip.h).min(i64::from(self.height));
        if !inside {
            return;
        }
        let a = coverage.clamp(0.0, 1.0);
        let i = (y as usize * self.width as usize + x as usize) * 3;
        for (px, &new) in self.pixels[i..i + 3].iter_mut().zip(&c) {
            let old = f32::from(*px);
            *px = (old + (f32::from(new) - old) * a).round() as u8;
        }
    }
}

/// A glyph's coverage, drawn once per font, glyph and size.
struct Bitmap {
    /// Offset of the bitmap's top left from the pen position.
    dx: i64,
    dy: i64,
    w: u32,
    coverage: Vec<f32>,
    /// The glyph's advance at this size.
    advance: f32,
}

#[derive(Default)]
struct GlyphCache {
    bitmaps: HashMap<(usize, GlyphId, u32), Option<Bitmap>>,
}

impl GlyphCache {
    fn get(&mut self, font_no: usize, font: &FontVec, id: GlyphId, px: f32) -> Option<&Bitmap> {
        let key = (font_no, id, px.to_bits());
        self.bitmaps
            .entry(key)
            .or_insert_with(|| {
                let scale = PxScale::from(px);
                let advance = font.as_scaled(scale).h_advance(id);
                let glyph = id.with_scale_and_position(scale, point(0.0, 0.0));
                let outlined = font.outline_glyph(glyph)?;
                let b = outlined.px_bounds();
                let w = b.width().max(0.0) as u32;
                let h = b.height().max(0.0) as u32;
                let mut coverage = vec![0.0; w as usize * h as usize];
                outlined.draw(|x, y, c| {
                    if x < w && y < h {
                        coverage[(y * w + x) as usize] = c;
                    }
                });
                Some(Bitmap {
                    dx: b.min.x as i64,
                    dy: b.min.y as i64,
                    w,
                    coverage,
                    advance,
                })
            })
            .as_ref()
    }
}

/// Draws `c` in `slot` (one or two cells), centred, shrunk if its font
/// draws it wider than the slot.
#[allow(clippy::too_many_arguments)]
fn draw_char(
    canvas: &mut Canvas,
    cache: &mut GlyphCache,
    fonts: &Fonts,
    m: &Metrics,
    slot: Rect,
    c: char,
    fg: Rgb,
    bold: bool,
) {
    let (font_no, font, id) = match fonts.glyph(c) {
        fonts::Lookup::Glyph(n, f, id) => (n, f, id),
        fonts::Lookup::Blank => return,
        fonts::Lookup::Missing => {
            draw_box(canvas, slot, fg);
            return;
        }
    };
    let mut px = if font_no == 0 { m.px } else { m.px_for(font) };
    let advance = font.as_scaled(PxScale::from(px)).h_advance(id);
    if advance > slot.w as f32 + 0.5 {
        px *= slot.w as f32 / advance;
    }
    let Some(b) = cache.get(font_no, font, id, px) else {
        return;
    };
    let pen_x = i64::from(slot.x) + ((slot.w as f32 - b.advance.min(slot.w as f32)) / 2.0) as i64;
    let pen_y = i64::from(slot.y + m.baseline);
    let passes: &[i64] = if bold { &[0, 1] } else { &[0] };
    for &shift in passes {
        for (i, &cov) in b.coverage.iter().enumerate() {
            if cov <= 0.0 {
                continue;
            }
            let x = pen_x + b.dx + (i as i64 % i64::from(b.w)) + shift;
            let y = pen_y + b.dy + i as i64 / i64::from(b.w);
            canvas.blend(x, y, fg, cov, slot);
        }
    }
}

/// The box drawn for a character no font has.
fn draw_box(canvas: &mut Canvas, slot: Rect, fg: Rgb) {
    if slot.w < 4 || slot.h < 4 {
        return;
    }
    let inner = Rect {
        x: slot.x + 1,
        y: slot.y + 2,
        w: slot.w - 2,
        h: slot.h - 4,
    };
    canvas.fill(Rect { h: 1, ..inner }, fg);
    canvas.fill(
        Rect {
            y: inner.y + inner.h - 1,
            h: 1,
            ..inner
        },
        fg,
    );
    canvas.fill(Rect { w: 1, ..inner }, fg);
    canvas.fill(
        Rect {
            x: inner.x + inner.w - 1,
            w: 1,
            ..inner
        },
        fg,
    );
}

fn encode(canvas: &Canvas) -> Result<Vec<u8>, RenderError> {
    let mut out = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut out, canvas.width.max(1), canvas.height.max(1));
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut writer = enc
            .write_header()
            .map_err(|e| RenderError::Encode(e.to_string()))?;
        let empty = [0u8; 3];
        let data = if canvas.pixels.is_empty() {
            &empty[..]
        } else {
            &canvas.pixels[..]
        };
        writer
            .write_image_data(data)
            .map_err(|e| RenderError::Encode(e.to_string()))?;
        writer
            .finish()
            .map_err(|e| RenderError::Encode(e.to_string()))?;
    }
    if out.len() > MAX_PNG_BYTES {
        return Err(RenderError::TooLarge(out.len()));
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
