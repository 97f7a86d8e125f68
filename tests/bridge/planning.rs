//! A GSD project's planning files watched while a command runs: GSD's
//! `gsd-sdk` rewrites `.planning/STATE.md` between steps without printing
//! anything, and the running command's progress card still shows where
//! the project stands.

use crate::support::bridge::Bridge;
use crate::support::bridge::Shown;

/// STATE.md at phase `n` of 3.
fn state(n: u32) -> String {
    format!("# Project State\n\nPhase: {n} of 3 (Cart)\nStatus: executing\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_md_rewritten_mid_run_shows_on_the_progress_card() {
    let mut b = Bridge::start().await;
    b.say("oc_1", "ou_alice", "/gsd:new-project shop").await;
    b.sent_with("You said: /gsd:new-project").await;
    let planning = b.home.path().join("ws/shop/.planning");
    std::fs::create_dir_all(&planning).unwrap();
    std::fs::write(planning.join("STATE.md"), state(1)).unwrap();

    // discuss-phase waits on its question with no progress line printed.
    b.say("oc_1", "ou_alice", "/gsd:discuss-phase 2").await;
    b.card_with("Which scope should phase 2 cover?").await;
    b.card_with("GSD: phase 1 of 3 (Cart)").await;
    std::fs::write(planning.join("STATE.md"), state(3)).unwrap();
    let card = b.card_with("GSD: phase 3 of 3 (Cart)").await;
    assert!(
        !crate::support::bridge::is_send(&card),
        "the progress card, updated"
    );
    assert!(
        card.text().contains("shop: /gsd:discuss-phase 2"),
        "{}",
        card.text()
    );
    let progress = b
        .events()
        .iter()
        .filter(|r| r.kind == "detection" && r.fields["detection"] == "progress")
        .count();
    assert_eq!(progress, 0, "no progress line was on screen");
}
