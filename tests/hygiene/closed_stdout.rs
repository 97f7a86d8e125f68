//! Commands whose reader went away (`clawmux … | head -0`): each ends
//! successfully and quietly instead of panicking on the closed pipe.

use clawmux::bridge::access::pairing::{Pairing, PendingPairing};

use super::clawmux;

#[test]
fn a_closed_stdout_is_not_a_panic() {
    let home = tempfile::tempdir().expect("temp dir");
    // Something for `pairing list` to print.
    let pending = PendingPairing {
        open_id: "ou_waiting".into(),
        created_ms: clawmux::store::clock::now_ms(),
    };
    Pairing::new(home.path())
        .save_pending("ABCDEFGH", pending)
        .expect("a pending code");
    let root = home.path().to_str().expect("utf-8 temp dir");
    let commands: [&[&str]; 3] = [
        &["pairing", "list"],
        &["openspec", "slug-line", "add-cart"],
        &["openspec", "detect", "--root", root],
    ];
    for args in commands {
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let out = clawmux(home.path(), args)
            .stdout(writer)
            .output()
            .expect("run clawmux");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {out:?}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}
