//! `/gsd:screen` on Feishu against the local server: the pane is drawn as
//! a PNG, uploaded (`im/v1/images`), and shown in the card's `img` by the
//! key the server issued, the screen's text in a closed panel under it;
//! when Feishu refuses the upload the card comes without the picture, its
//! text open.

use std::time::Duration;

use clawmux::render::{self, FontPaths, Grid};
use serde_json::Value;

use crate::support::fake_feishu::{FakeFeishu, Recorded};
use crate::support::feishu_serve::{demo_project, feishu_config, start};
use crate::support::tmux::TmuxServer;

const WAIT: Duration = Duration::from_secs(20);

async fn card(fake: &FakeFeishu, what: &str, pred: impl Fn(&Recorded) -> bool) -> Recorded {
    match fake.wait_for_card(&pred, WAIT).await {
        Some(c) => c,
        None => panic!("no card {what}; sent:\n{}", fake.listing()),
    }
}

fn elements(c: &Recorded) -> Vec<Value> {
    c.card["body"]["elements"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The PNG's width and height.
fn png_size(bytes: &[u8]) -> (u32, u32) {
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes.to_vec()));
    let info = decoder.read_info().expect("a PNG").info().clone();
    (info.width, info.height)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn screen_is_a_picture_the_server_issued_the_key_for() {
    let fake = FakeFeishu::start().await;
    let tmux = TmuxServer::new();
    let home = tempfile::tempdir().unwrap();
    let config = feishu_config(&tmux, home.path(), &fake);
    let (cols, rows) = (config.tmux.width, config.tmux.height);
    let _live = start(&config, home.path()).await;
    assert!(fake.wait_connected(1, WAIT).await, "long connection up");
    demo_project(&fake).await;

    let asked = fake.push_message("oc_1", "ou_alice", "/gsd:screen");
    let shown = card(&fake, "the screen", |c| c.title() == "Screen of demo").await;
    assert_eq!(shown.target, asked.message_id, "it replies to the command");
    let els = elements(&shown);
    assert_eq!(els[0]["tag"], "img", "{}", shown.card);
    let key = els[0]["img_key"].as_str().unwrap_or_default();
    let uploads = fake.uploaded_images();
    assert_eq!(uploads.len(), 1);
    assert_eq!(key, uploads[0].image_key, "the key the server issued");
    assert_eq!(uploads[0].image_type, "message");
    // The picture is the pane's size: its cells at the renderer's size.
    let fonts = render::fonts::shared(&FontPaths::default()).expect("fonts");
    let blank = vt100::Parser::new(
        std::num::NonZeroU16::new(rows).unwrap(),
        std::num::NonZeroU16::new(cols).unwrap(),
        0,
    );
    let sized = render::render(&Grid::from_screen(blank.screen()), &fonts).unwrap();
    assert_eq!(png_size(&uploads[0].bytes), (sized.width, sized.height));
    assert_eq!(sized.width, u32::from(cols) * sized.cell_width);
    assert_eq!(sized.height, u32::from(rows) * sized.cell_height);
    // The text is in a closed panel under it.
    let panels = shown.panels();
    assert_eq!(panels.len(), 1, "{}", shown.card);
    assert!(!panels[0].0, "closed");
    assert!(
        panels[0].1.contains("You said: /gsd:new-project"),
        "{}",
        panels[0].1
    );
    // Delivered: the PNG kept for retries is gone.
    let left: Vec<_> = std::fs::read_dir(home.path().join("outbox-files"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(
        left.iter()
            .all(|p| p.extension().is_none_or(|e| e != "png")),
        "{left:?}"
    );

    // Without the image permission: the card goes without the picture.
    fake.reject_next(&[(
        99991672,
        "Access denied. One of the following scopes is required: [im:resource]",
    )]);
    fake.push_message("oc_1", "ou_alice", "/gsd:screen");
    let plain = card(&fake, "the screen without a picture", |c| {
        c.title() == "Screen of demo" && c.card_text().contains("No picture")
    })
    .await;
    assert!(elements(&plain).iter().all(|e| e["tag"] != "img"));
    assert!(
        plain.card_text().contains("error 99991672"),
        "{}",
        plain.card_text()
    );
    // The screen's text is on the card itself, no longer in a panel.
    assert!(plain.panels().is_empty(), "{}", plain.card_text());
    assert!(plain.card_text().contains("You said: /gsd:new-project"));
    assert_eq!(fake.uploaded_images().len(), 1);
}
