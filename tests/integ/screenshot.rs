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
