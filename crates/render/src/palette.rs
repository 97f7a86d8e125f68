//! Terminal colours to RGB: xterm's 256-colour palette (16 ANSI colours,
//! the 6x6x6 cube, 24 greys), and the default foreground and background
//! of a dark terminal.

use super::grid::Color;

pub(crate) type Rgb = [u8; 3];

/// The default background: a dark terminal, as most people run agents in.
pub(crate) const DEFAULT_BG: Rgb = [0x1e, 0x1e, 0x1e];
/// The default foreground.
pub(crate) const DEFAULT_FG: Rgb = [0xd4, 0xd4, 0xd4];

/// xterm's ANSI colours 0–15.
const ANSI: [Rgb; 16] = [
    [0x00, 0x00, 0x00],
    [0xcd, 0x00, 0x00],
    [0x00, 0xcd, 0x00],
    [0xcd, 0xcd, 0x00],
    [0x00, 0x00, 0xee],
    [0xcd, 0x00, 0xcd],
    [0x00, 0xcd, 0xcd],
    [0xe5, 0xe5, 0xe5],
    [0x7f, 0x7f, 0x7f],
    [0xff, 0x00, 0x00],
    [0x00, 0xff, 0x00],
    [0xff, 0xff, 0x00],
    [0x5c, 0x5c, 0xff],
    [0xff, 0x00, 0xff],
    [0x00, 0xff, 0xff],
    [0xff, 0xff, 0xff],
];

/// The RGB of indexed colour `i`, as xterm defines it.
pub(crate) fn indexed(i: u8) -> Rgb {
    match i {
        0..=15 => ANSI[usize::from(i)],
        16..=231 => {
            let n = i - 16;
            let level = |v: u8| if v == 0 { 0 } else { 55 + 40 * v };
            [level(n / 36), level((n / 6) % 6), level(n % 6)]
        }
        _ => {
            let v = 8 + 10 * (i - 232);
            [v, v, v]
        }
    }
}

/// The RGB of `c`, `default` standing for [`Color::Default`].
pub(crate) fn resolve(c: Color, default: Rgb) -> Rgb {
    match c {
        Color::Default => default,
        Color::Idx(i) => indexed(i),
        Color::Rgb(r, g, b) => [r, g, b],
    }
}

/// Halfway between `fg` and `bg` (dim text).
pub(crate) fn dimmed(fg: Rgb, bg: Rgb) -> Rgb {
    let mid = |a: u8, b: u8| ((u16::from(a) + u16::from(b)) / 2) as u8;
    [mid(fg[0], bg[0]), mid(fg[1], bg[1]), mid(fg[2], bg[2])]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xterm_palette_points() {
        assert_eq!(indexed(1), [0xcd, 0, 0]);
        assert_eq!(indexed(16), [0, 0, 0]);
        assert_eq!(indexed(196), [255, 0, 0]);
        assert_eq!(indexed(21), [0, 0, 255]);
        assert_eq!(indexed(231), [255, 255, 255]);
        assert_eq!(indexed(232), [8, 8, 8]);
        assert_eq!(indexed(255), [238, 238, 238]);
        assert_eq!(resolve(Color::Default, DEFAULT_FG), DEFAULT_FG);
        assert_eq!(resolve(Color::Rgb(1, 2, 3), DEFAULT_FG), [1, 2, 3]);
    }
}
