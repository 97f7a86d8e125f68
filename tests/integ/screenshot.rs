//! `clawmux screenshot` on a real tmux pane clawmux does not watch: its
//! `capture-pane -e -p` output and cursor drawn as a PNG of the pane's
//! size, with the colours the program set.

use std::process::Command;
use std::time::Duration;

use clawmux::render::{self, FontPaths, Grid};

use crate::support::tmux::TmuxServer;

#[test]
fn a_pane_is_drawn_at_its_size_with_its_colours() {
    let tmux = TmuxServer::new();
    let script = "printf '\\033[41m  RED  \\033[0m \\033[1;32mgreen\\033[0m 中文\\n'; exec cat";
    tmux.new_session("shot", &format!("sh -c \"{script}\""));
    tmux.wait_for_screen("shot", "中文", Duration::from_secs(10));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pane.png");
    let out = Command::new(env!("CARGO_BIN_EXE_clawmux"))
        .args(["screenshot", "-L", &tmux.socket, "-t", "shot", "-o"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("120x40 cells"),
        "{out:?}"
    );
    let png = std::fs::read(&file).unwrap();
    let decoder = png::Decoder::new(std::io::Cursor::new(png));
    let mut reader = decoder.read_info().unwrap();
    let mut rgb = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut rgb).unwrap();
    // The size of a 120x40 grid drawn with the same fonts.
    let fonts = render::fonts::shared(&FontPaths::default()).unwrap();
    let blank = Grid::from_capture(b"", 120, 40, None);
    let sized = render::render(&blank, &fonts).unwrap();
    assert_eq!((info.width, info.height), (sized.width, sized.height));
    // Cell (0, 0) is a blank on a red background: its middle is red.
    let (cw, ch) = (sized.cell_width, sized.cell_height);
    let at = |x: u32, y: u32| {
        let i = ((y * info.width + x) * 3) as usize;
        [rgb[i], rgb[i + 1], rgb[i + 2]]
    };
    assert_eq!(at(cw / 2, ch / 2), [0xcd, 0, 0]);
    // Row 1 starts with the cursor (`cat` waits there): a block.
    assert_ne!(at(cw / 2, ch + ch / 2), at(cw * 5 + cw / 2, ch + ch / 2));
}

/// `clawmux screenshot -t PANE` under `/usr/bin/time`: its stdout and
/// peak resident memory in bytes (the test fails without GNU time). Not `ru_maxrss` of a child of this process: Linux counts
/// the forked test process's memory in it.
fn screenshot_rss(tmux: &TmuxServer, target: &str, file: &std::path::Path) -> (String, u64) {
    const TIME: &str = "/usr/bin/time";
    if !std::path::Path::new(TIME).exists() {
        crate::support::missing("GNU time (/usr/bin/time)", "apt-get install time");
    }
    let report = file.with_extension("rss");
    let out = Command::new(TIME)
        .args(["-f", "%M", "-o"])
        .arg(&report)
        .arg(env!("CARGO_BIN_EXE_clawmux"))
        .args(["screenshot", "-L", &tmux.socket, "-t", target, "-o"])
        .arg(file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let report = std::fs::read_to_string(&report).expect("GNU time's report");
    let kib = (report.trim().lines().last())
        .and_then(|l| l.trim().parse::<u64>().ok())
        .unwrap_or_else(|| panic!("GNU time's report holds no KiB figure: {report:?}"));
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        kib * 1024,
    )
}

/// The PNG's width and height.
fn png_size(file: &std::path::Path) -> (u32, u32) {
    let decoder = png::Decoder::new(std::io::Cursor::new(std::fs::read(file).unwrap()));
    let info = decoder.read_info().unwrap();
    (info.info().width, info.info().height)
}

/// A program can make its window 10000x10000 cells (tmux's limit): the
/// screenshot is of the grid's bottom-left 500x200 cells, and its terminal
/// model is no larger, so it takes the memory of a 500x200 pane's (it was
/// 3.1 GB for 10000x10000, 628 MB for 10000x2000).
#[test]
fn a_pane_resized_huge_is_drawn_in_the_memory_of_the_grid() {
    use clawmux::render::grid::{MAX_GRID_COLS, MAX_GRID_ROWS};
    let tmux = TmuxServer::new();
    let (cols, rows) = (MAX_GRID_COLS.to_string(), MAX_GRID_ROWS.to_string());
    let script = "read x; printf '\\033[10000;1Hat the bottom'; exec cat";
    tmux.ok(&[
        "new-session",
        "-d",
        "-s",
        "shot",
        "-x",
        &cols,
        "-y",
        &rows,
        &format!("sh -c \"{script}\""),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let (said, grid_rss) = screenshot_rss(&tmux, "shot", &dir.path().join("grid.png"));
    assert!(said.contains(&format!("{cols}x{rows} cells")), "{said}");

    tmux.ok(&["resize-window", "-t", "shot", "-x", "10000", "-y", "10000"]);
    let size = tmux.ok(&[
        "display-message",
        "-p",
        "-t",
        "shot",
        "#{pane_width}x#{pane_height}",
    ]);
    assert_eq!(size.trim(), "10000x10000");
    tmux.ok(&["send-keys", "-t", "shot", "Enter"]);
    tmux.wait_for_screen("shot", "at the bottom", Duration::from_secs(10));
    let (said, huge_rss) = screenshot_rss(&tmux, "shot", &dir.path().join("huge.png"));
    assert!(said.contains("10000x10000 cells"), "{said}");
    assert_eq!(
        png_size(&dir.path().join("huge.png")),
        png_size(&dir.path().join("grid.png")),
        "drawn at the grid's size"
    );
    let (grid, huge) = (grid_rss, huge_rss);
    eprintln!(
        "peak RSS: {cols}x{rows} pane {} KiB, 10000x10000 pane {} KiB",
        grid / 1024,
        huge / 1024
    );
    // The capture of 10000 rows and tmux's answer are the only extra: far
    // below one 10000x10000 model (3 GB).
    assert!(huge <= grid + (32 << 20), "{huge} bytes against {grid}");
}

/// `clawmux screenshot ARGS` with tmux's sockets under `tmpdir` and no
/// enclosing tmux session: (exit code, stdout, stderr).
fn screenshot(args: &[&str], tmpdir: Option<&std::path::Path>) -> (Option<i32>, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_clawmux"));
    cmd.arg("screenshot").args(args).env_remove("TMUX");
    if let Some(dir) = tmpdir {
        cmd.env("TMUX_TMPDIR", dir);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Without `-L` and no default server, one line names the socket tried
/// and says to name the server, instead of tmux's "error connecting to".
#[test]
fn no_server_names_the_socket_tried() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pane.png");
    let file = file.to_str().unwrap();
    let (code, _, stderr) = screenshot(&["-t", "x", "-o", file], Some(dir.path()));
    assert_eq!(code, Some(1), "{stderr}");
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let socket = dir.path().join(format!("tmux-{uid}/default"));
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(&format!("no tmux server at {}", socket.display()))
            && stderr.contains("no -L or -S given")
            && stderr.contains("-L NAME"),
        "{stderr}"
    );
    assert!(!stderr.contains("error connecting"), "{stderr}");
    let (code, _, stderr) = screenshot(
        &["-L", "nobody-here", "-t", "x", "-o", file],
        Some(dir.path()),
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("`-L nobody-here`"), "{stderr}");
}

/// An unknown pane is named with the server asked: bad input, exit 2.
#[test]
fn an_unknown_pane_is_named_with_its_server() {
    let tmux = TmuxServer::new();
    tmux.new_session("here", "exec cat");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pane.png");
    for target in ["nosuch", "%999"] {
        let (code, _, stderr) = screenshot(
            &[
                "-L",
                &tmux.socket,
                "-t",
                target,
                "-o",
                file.to_str().unwrap(),
            ],
            None,
        );
        assert_eq!(code, Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "no pane {target:?} on the tmux server `-L {}`",
                tmux.socket
            )) && stderr.contains(&format!("tmux -L {} list-panes -a", tmux.socket)),
            "{stderr}"
        );
    }
    assert!(!file.exists());
}

/// A character no font has is drawn as a box and named on stderr with
/// its code point and the package to install; the picture is still made.
#[test]
fn a_missing_glyph_is_named_in_a_warning() {
    let tmux = TmuxServer::new();
    // U+E0F0, private use: no font on any machine draws it.
    tmux.new_session(
        "glyph",
        "sh -c \"printf 'ok \\356\\203\\260 ok\\n'; exec cat\"",
    );
    tmux.wait_for_screen("glyph", "ok", Duration::from_secs(10));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pane.png");
    let file = file.to_str().unwrap();
    let (code, stdout, stderr) = screenshot(&["-L", &tmux.socket, "-t", "glyph", "-o", file], None);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains(" cells)"), "{stdout}");
    assert!(
        stderr.contains("warning: no font on this machine has \u{E0F0} (U+E0F0)")
            && stderr.contains("fonts-symbola"),
        "{stderr}"
    );
    // A pane every font covers gives no warning.
    tmux.new_session("plain", "sh -c \"printf 'plain\\n'; exec cat\"");
    tmux.wait_for_screen("plain", "plain", Duration::from_secs(10));
    let (code, _, stderr) = screenshot(&["-L", &tmux.socket, "-t", "plain", "-o", file], None);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
}
