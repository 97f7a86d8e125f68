//! The fonts a picture is drawn with, found on the machine: a monospace
//! font for the grid (its advance sets the cell width), then fallbacks
//! tried in order for characters it lacks: a CJK font, a symbol font with
//! emoji outlines, DejaVu Sans.
//!
//! Each font is found by, in order: a path the config names; the file
//! names of well-known packages under the fontconfig directories; and
//! `fc-match` (which knows fonts installed under other names). A candidate
//! is taken only if it loads and passes its role's check (monospace: `i`
//! and `M` advance alike; CJK: has `中`; symbols: has `😀`). Only the
//! monospace font is required; without one there is no picture, and
//! [`FontError::NoMonospace`] says which package to install.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ab_glyph::{Font, FontVec, GlyphId};

/// Largest font file read: Noto Sans CJK's collection is 20 MB, the
/// largest common font; a bigger file is skipped, not read.
pub const MAX_FONT_FILE_BYTES: u64 = 64 * 1024 * 1024;
/// Most files looked at while scanning the font directories.
const MAX_SCANNED_FILES: usize = 50_000;
/// Deepest directory level scanned under a font directory.
const MAX_SCAN_DEPTH: usize = 6;

/// The Debian package that brings the monospace font.
pub const MONO_PACKAGE: &str = "fonts-dejavu-core";
/// The Debian package that brings the CJK font.
pub const CJK_PACKAGE: &str = "fonts-noto-cjk";
/// The Debian package that brings emoji and symbol outlines.
pub const SYMBOL_PACKAGE: &str = "fonts-symbola";

/// Fonts named in the config (`[screen.fonts]`), tried before any other.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FontPaths {
    /// The monospace font.
    pub mono: Option<PathBuf>,
    /// The font for CJK characters.
    pub cjk: Option<PathBuf>,
    /// A font for emoji and symbols.
    pub symbols: Option<PathBuf>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FontError {
    #[error(
        "no monospace font found on this machine (looked for DejaVu Sans Mono, Noto Sans Mono, Liberation Mono, and asked fc-match): install {MONO_PACKAGE}, or name one in [screen.fonts] mono"
    )]
    NoMonospace,
}

/// What a font is for; each role has its own check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Mono,
    Cjk,
    Symbols,
    Fallback,
}

impl Role {
    /// File names of well-known fonts for this role, best first.
    fn file_names(self) -> &'static [&'static str] {
        match self {
            Role::Mono => &[
                "DejaVuSansMono.ttf",
                "NotoSansMono-Regular.ttf",
                "LiberationMono-Regular.ttf",
            ],
            Role::Cjk => &[
                "NotoSansCJK-Regular.ttc",
                "NotoSansCJKsc-Regular.otf",
                "wqy-zenhei.ttc",
                "wqy-microhei.ttc",
                "NotoSerifCJK-Regular.ttc",
            ],
            Role::Symbols => &["Symbola_hint.ttf", "Symbola.ttf", "NotoEmoji-Regular.ttf"],
            Role::Fallback => &["DejaVuSans.ttf"],
        }
    }

    /// The fontconfig pattern `fc-match` is asked, if any.
    fn pattern(self) -> Option<&'static str> {
        match self {
            Role::Mono => Some("monospace"),
            Role::Cjk => Some("sans:lang=zh-cn"),
            Role::Symbols => Some("emoji"),
            Role::Fallback => None,
        }
    }

    fn accepts(self, font: &FontVec) -> bool {
        let has = |c: char| font.glyph_id(c) != GlyphId(0);
        match self {
            Role::Mono => {
                has('M')
                    && has('i')
                    && font.h_advance_unscaled(font.glyph_id('M'))
                        == font.h_advance_unscaled(font.glyph_id('i'))
            }
            Role::Cjk => has('中'),
            Role::Symbols => has('😀'),
            Role::Fallback => has('A'),
        }
    }
}

/// How a character is drawn.
pub enum Lookup<'a> {
    /// This glyph of this font (and the font's place in [`Fonts::fonts`]).
    Glyph(usize, &'a FontVec, GlyphId),
    /// Nothing: a font knows the character and it has no outline (a space).
    Blank,
    /// No font has it: a box is drawn in its place.
    Missing,
}

/// A loaded font and where it came from.
pub struct LoadedFont {
    pub font: FontVec,
    pub path: PathBuf,
}

/// The monospace font and its fallbacks, in the order glyphs are looked up.
pub struct Fonts {
    /// `fonts[0]` is the monospace font ([`Fonts::discover`] makes no
    /// other kind).
    fonts: Vec<LoadedFont>,
}

impl Fonts {
    /// Finds and loads the fonts (see the module doc).
    pub fn discover(paths: &FontPaths) -> Result<Fonts, FontError> {
        Fonts::discover_in(paths, &font_dirs(), true)
    }

    /// [`Fonts::discover`] over `dirs` only, asking `fc-match` or not: a
    /// machine with fewer fonts, as checks of the fallbacks need.
    pub fn discover_in(
        paths: &FontPaths,
        dirs: &[PathBuf],
        ask_fc: bool,
    ) -> Result<Fonts, FontError> {
        let mut fonts = Vec::new();
        let roles = [
            (Role::Mono, &paths.mono),
            (Role::Cjk, &paths.cjk),
            (Role::Symbols, &paths.symbols),
            (Role::Fallback, &None),
        ];
        for (role, configured) in roles {
            let found = find(role, configured.as_deref(), dirs, ask_fc);
            match found {
                Some(f) if !fonts.iter().any(|l: &LoadedFont| l.path == f.path) => fonts.push(f),
                Some(_) => {}
                None if role == Role::Mono => return Err(FontError::NoMonospace),
                None => {}
            }
        }
        Ok(Fonts { fonts })
    }

    /// The monospace font.
    pub fn mono(&self) -> &FontVec {
        &self.fonts[0].font
    }

    /// The font files in use, the monospace one first.
    pub fn paths(&self) -> Vec<&Path> {
        self.fonts.iter().map(|f| f.path.as_path()).collect()
    }

    /// How `c` is drawn: the first font with an outline for it (a colour
    /// bitmap font's glyph has none: the next font is tried).
    pub fn glyph(&self, c: char) -> Lookup<'_> {
        let mut known = false;
        for (i, l) in self.fonts.iter().enumerate() {
            let id = l.font.glyph_id(c);
            if id == GlyphId(0) {
                continue;
            }
            if l.font.outline(id).is_some() {
                return Lookup::Glyph(i, &l.font, id);
            }
            known = true;
        }
        if known {
            Lookup::Blank
        } else {
            Lookup::Missing
        }
    }

    /// Whether a CJK font was found (a picture without one shows boxes).
    pub fn has_cjk(&self) -> bool {
        matches!(self.glyph('中'), Lookup::Glyph(..))
    }

    /// The characters of `text` no font has (drawn as boxes), each once,
    /// in order of first sight, at most [`MAX_NAMED_MISSING`]. Whitespace
    /// and control characters are not drawn and not counted.
    pub fn missing(&self, text: impl IntoIterator<Item = char>) -> Vec<char> {
        let mut missing = Vec::new();
        for c in text {
            if missing.len() == MAX_NAMED_MISSING {
                break;
            }
            if c.is_whitespace() || c.is_control() || missing.contains(&c) {
                continue;
            }
            if matches!(self.glyph(c), Lookup::Missing) {
                missing.push(c);
            }
        }
        missing
    }
}

/// Most missing characters named in one warning: enough to see which
/// ranges lack a font, short enough for one line.
pub const MAX_NAMED_MISSING: usize = 12;

/// Whether `c` is a CJK character (the CJK font's job): ideographs, kana,
/// hangul, CJK punctuation and full-width forms.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x2E80..=0x2FDF | 0x3000..=0x30FF | 0x3100..=0x31FF | 0x3400..=0x4DBF
        | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF | 0xFF00..=0xFFEF
        | 0x20000..=0x2FFFF)
}

/// `⎿ (U+23BF), 中 (U+4E2D)`: the characters and their code points.
pub fn describe(chars: &[char]) -> String {
    let named: Vec<String> = chars
        .iter()
        .map(|c| format!("{c} (U+{:04X})", *c as u32))
        .collect();
    named.join(", ")
}

/// What to install for `chars`: the CJK package for CJK characters, the
/// symbol package for the rest.
pub fn remedy(chars: &[char]) -> String {
    let mut packages = Vec::new();
    if chars.iter().any(|c| is_cjk(*c)) {
        packages.push(CJK_PACKAGE);
    }
    if chars.iter().any(|c| !is_cjk(*c)) {
        packages.push(SYMBOL_PACKAGE);
    }
    format!(
        "install {} (e.g. `sudo apt-get install {}`), or name a font that has them in [screen.fonts]",
        packages.join(" and "),
        packages.join(" ")
    )
}

/// The fonts, found once per process and shared; a failed search is not
/// kept, so installing a font needs no restart.
pub fn shared(paths: &FontPaths) -> Result<Arc<Fonts>, FontError> {
    static FONTS: Mutex<Option<Arc<Fonts>>> = Mutex::new(None);
    let mut cached = FONTS.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(f) = cached.as_ref() {
        return Ok(Arc::clone(f));
    }
    let fonts = Arc::new(Fonts::discover(paths)?);
    tracing::info!(
        fonts = ?fonts.paths(),
        "fonts for screen pictures"
    );
    *cached = Some(Arc::clone(&fonts));
    Ok(fonts)
}

fn find(
    role: Role,
    configured: Option<&Path>,
    dirs: &[PathBuf],
    ask_fc: bool,
) -> Option<LoadedFont> {
    if let Some(path) = configured {
        match load(path, 0) {
            Some(f) if role.accepts(&f.font) => return Some(f),
            _ => tracing::warn!(path = %path.display(), ?role, "configured font not usable"),
        }
    }
    let wanted = role.file_names();
    let mut files = scan(dirs, wanted);
    // Best-known name first, whatever directory it is in.
    files.sort_by_key(|p| {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        wanted.iter().position(|w| *w == name)
    });
    for path in files {
        if let Some(f) = load(&path, 0).filter(|f| role.accepts(&f.font)) {
            return Some(f);
        }
    }
    if !ask_fc {
        return None;
    }
    let (path, index) = fc_match(role.pattern()?)?;
    load(&path, index).filter(|f| role.accepts(&f.font))
}

/// Reads and parses a font file (face `index` of a collection), at most
/// [`MAX_FONT_FILE_BYTES`].
fn load(path: &Path, index: u32) -> Option<LoadedFont> {
    let file = std::fs::File::open(path).ok()?;
    if file.metadata().ok()?.len() > MAX_FONT_FILE_BYTES {
        tracing::warn!(path = %path.display(), "font file over {MAX_FONT_FILE_BYTES} bytes: skipped");
        return None;
    }
    let mut data = Vec::new();
    file.take(MAX_FONT_FILE_BYTES + 1)
        .read_to_end(&mut data)
        .ok()?;
    if data.len() as u64 > MAX_FONT_FILE_BYTES {
        return None;
    }
    let font = FontVec::try_from_vec_and_index(data, index).ok()?;
    Some(LoadedFont {
        font,
        path: path.to_path_buf(),
    })
}

/// The directories fontconfig reads by default.
fn font_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![
        PathBuf::from("/usr/share/fonts"),
        PathBuf::from("/usr/local/share/fonts"),
    ];
    if let Some(home) = std::env::var_os("HOME") {
        let home = PathBuf::from(home);
        dirs.push(home.join(".local/share/fonts"));
        dirs.push(home.join(".fonts"));
    }
    dirs
}

/// Files under `dirs` whose name is one of `names`.
fn scan(dirs: &[PathBuf], names: &[&str]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut seen = 0usize;
    let mut stack: Vec<(PathBuf, usize)> = dirs.iter().map(|d| (d.clone(), 0)).collect();
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_SCANNED_FILES {
                return found;
            }
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() && depth < MAX_SCAN_DEPTH {
                stack.push((path, depth + 1));
            } else if (kind.is_file() || kind.is_symlink())
                && path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| names.contains(&n))
            {
                found.push(path);
            }
        }
    }
    found
}

/// `fc-match`'s answer for `pattern`: its file and face index. None when
/// fontconfig is not installed or answers nothing usable.
fn fc_match(pattern: &str) -> Option<(PathBuf, u32)> {
    let out = std::process::Command::new("fc-match")
        .args(["-f", "%{file}\n%{index}", pattern])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    let mut lines = text.lines();
    let file = PathBuf::from(lines.next()?.trim());
    let index = lines
        .next()
        .and_then(|i| i.trim().parse().ok())
        .unwrap_or(0);
    file.is_absolute().then_some((file, index))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_monospace_font_whose_cells_are_even() {
        let fonts = Fonts::discover(&FontPaths::default())
            .unwrap_or_else(|e| panic!("{e} (CI installs {MONO_PACKAGE})"));
        let mono = fonts.mono();
        assert_eq!(
            mono.h_advance_unscaled(mono.glyph_id('i')),
            mono.h_advance_unscaled(mono.glyph_id('W'))
        );
        assert!(matches!(fonts.glyph('a'), Lookup::Glyph(..)));
        assert!(matches!(fonts.glyph(' '), Lookup::Blank));
        assert!(matches!(fonts.glyph('\u{10FFFD}'), Lookup::Missing));
    }

    #[test]
    fn a_configured_font_that_is_not_one_is_passed_over() {
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("junk.ttf");
        std::fs::write(&junk, b"not a font").unwrap();
        let paths = FontPaths {
            mono: Some(junk.clone()),
            ..FontPaths::default()
        };
        let fonts = Fonts::discover(&paths).unwrap();
        assert_ne!(fonts.paths()[0], junk.as_path());
        assert!(load(&junk, 0).is_none());
        assert!(load(&dir.path().join("missing.ttf"), 0).is_none());
    }

    #[test]
    fn without_a_monospace_font_the_error_names_the_package() {
        let empty = tempfile::tempdir().unwrap();
        let dirs = [empty.path().to_path_buf()];
        let err = Fonts::discover_in(&FontPaths::default(), &dirs, false)
            .err()
            .expect("no font there");
        assert_eq!(err, FontError::NoMonospace);
        assert!(
            err.to_string().contains("install fonts-dejavu-core"),
            "{err}"
        );
        // A font named in the config is found without any directory.
        let mono = Fonts::discover(&FontPaths::default()).unwrap().paths()[0].to_path_buf();
        let paths = FontPaths {
            mono: Some(mono.clone()),
            ..FontPaths::default()
        };
        let fonts = Fonts::discover_in(&paths, &dirs, false).unwrap();
        assert_eq!(fonts.paths(), vec![mono.as_path()]);
    }

    #[test]
    fn missing_names_each_absent_character_once_and_the_package() {
        assert_eq!(describe(&['⎿', '中']), "⎿ (U+23BF), 中 (U+4E2D)");
        assert!(remedy(&['⎿']).contains(SYMBOL_PACKAGE) && !remedy(&['⎿']).contains(CJK_PACKAGE));
        assert!(remedy(&['中']).contains(CJK_PACKAGE) && !remedy(&['中']).contains(SYMBOL_PACKAGE));
        let Ok(fonts) = Fonts::discover(&FontPaths::default()) else {
            return;
        };
        // Private-use code points: no font on any machine draws them.
        let text = "ab \u{E0F0}\u{E0F0}\u{E0F1}\n";
        assert_eq!(fonts.missing(text.chars()), vec!['\u{E0F0}', '\u{E0F1}']);
        assert_eq!(fonts.missing("plain ascii".chars()), Vec::<char>::new());
        let many = (0xE000..0xE100).filter_map(char::from_u32);
        assert_eq!(fonts.missing(many).len(), MAX_NAMED_MISSING);
    }

    #[test]
    fn scan_finds_named_files_only() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/b/DejaVuSansMono.ttf"), b"x").unwrap();
        std::fs::write(dir.path().join("a/other.ttf"), b"x").unwrap();
        let found = scan(&[dir.path().to_path_buf()], Role::Mono.file_names());
        assert_eq!(found, vec![dir.path().join("a/b/DejaVuSansMono.ttf")]);
    }
}
