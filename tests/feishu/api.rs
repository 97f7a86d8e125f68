//! `feishu::Api` against the fake: tokens, retries, idempotency, throttling.

use std::sync::Arc;

use clawmux::feishu::api::RetryPolicy;
use clawmux::feishu::card::{Card, Element, Template};
use clawmux::feishu::{Api, FeishuError, ReceiveId};
use serde_json::Value;
use tokio::time::Duration;

use crate::support::fake_feishu::{FakeFeishu, Kind};

/// Short delays so fault tests take milliseconds, not the production seconds.
fn fast_retry() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 5,
        base_delay: Duration::from_millis(10),
        max_delay: Duration::from_millis(50),
    }
}

fn card(text: &str) -> Card {
    Card::new("Status", Template::Blue).push(Element::markdown(text))
}

fn chat() -> ReceiveId {
    ReceiveId::ChatId("oc_1".into())
}

#[tokio::test]
async fn send_reply_patch_round_trip() {
    let fake = FakeFeishu::start().await;
    let api = Api::with_retry(fake.config(), fast_retry());
    let id = api
        .send(&chat(), &card("hello"), "u-1")
        .await
        .expect("send");
    let reply = api.reply(&id, &card("re"), "u-2").await.expect("reply");
    api.patch(&id, &card("updated")).await.expect("patch");
    let rec = fake.sent_cards();
    assert_eq!(rec.len(), 3);
    assert_eq!(
        (rec[0].kind, rec[0].target.as_str(), rec[0].uuid.as_deref()),
        (Kind::Send, "chat_id:oc_1", Some("u-1"))
    );
    assert_eq!(
        (
            rec[1].kind,
            rec[1].target.as_str(),
            rec[1].message_id.as_str()
        ),
        (Kind::Reply, id.as_str(), reply.as_str())
    );
    assert_eq!(
        (rec[2].kind, rec[2].message_id.as_str()),
        (Kind::Patch, id.as_str())
    );
    assert_eq!(rec[2].card_text(), "updated");
    assert_eq!(rec[0].card["config"]["update_multi"], true);
    // One token for all three calls.
    assert_eq!(fake.token_requests(), 1);
}

#[tokio::test]
async fn token_refreshed_within_margin_of_expiry() {
    let fake = FakeFeishu::start().await;
    // expire = the 180 s margin: every call finds the token due for refresh.
    fake.set_token_expire(180);
    let api = Api::with_retry(fake.config(), fast_retry());
    api.send(&chat(), &card("a"), "u-a").await.expect("send");
    api.send(&chat(), &card("b"), "u-b").await.expect("send");
    assert_eq!(fake.token_requests(), 2);
}

#[tokio::test]
async fn token_expiring_mid_run_is_refreshed_once() {
    let fake = FakeFeishu::start().await;
    let api = Api::with_retry(fake.config(), fast_retry());
    let id = api.send(&chat(), &card("a"), "u-a").await.expect("send");
    fake.expire_tokens();
    api.patch(&id, &card("b"))
        .await
        .expect("patch after expiry");
    api.send(&chat(), &card("c"), "u-c")
        .await
        .expect("send after refresh");
    assert_eq!(fake.token_requests(), 2);
    assert_eq!(fake.sent_cards().len(), 3);
}

#[tokio::test]
async fn server_errors_are_retried_and_uuid_prevents_duplicates() {
    let fake = FakeFeishu::start().await;
    let api = Api::with_retry(fake.config(), fast_retry());
    api.tenant_token().await.expect("token");
    fake.fail_next(3);
    api.send(&chat(), &card("a"), "u-a")
        .await
        .expect("send after 3 x 500");
    // The message was stored but the answer lost: the retry with the same
    // uuid must not create a second message.
    fake.fail_after_accept_next(2);
    let id = api
        .send(&chat(), &card("b"), "u-b")
        .await
        .expect("send after lost answers");
    let sent: Vec<_> = fake
        .sent_cards()
        .into_iter()
        .filter(|r| r.kind == Kind::Send)
        .collect();
    assert_eq!(sent.len(), 2, "exactly one message per uuid");
    assert_eq!(sent[1].message_id, id);
    // token + (3 failures + 1) + (stored-then-500, then the uuid hit)
    assert_eq!(fake.api_attempts(), 1 + 4 + 2);
}

#[tokio::test]
async fn rate_limit_waits_for_the_reset_header() {
    let fake = FakeFeishu::start().await;
    let api = Api::with_retry(fake.config(), fast_retry());
    api.tenant_token().await.expect("token");
    fake.rate_limit_next(2, 1);
    api.send(&chat(), &card("a"), "u-a")
        .await
        .expect("send after 429s");
    let times = fake.attempt_times();
    // token, 429, 429, ok
    assert_eq!(times.len(), 4);
    for pair in times[1..].windows(2) {
        let gap = pair[1] - pair[0];
        assert!(
            gap >= Duration::from_secs(1),
            "retried after {gap:?}, before x-ogw-ratelimit-reset"
        );
    }
}

#[tokio::test]
async fn storm_of_429_and_5xx_loses_nothing() {
    let fake = FakeFeishu::start().await;
    // More attempts than faults: no single call can exhaust its budget.
    let api = Arc::new(Api::with_retry(
        fake.config(),
        RetryPolicy {
            max_attempts: 12,
            ..fast_retry()
        },
    ));
    fake.rate_limit_next(6, 0);
    fake.fail_next(4);
    // 20 at once to one chat, unpaced: this test is about the app-wide
    // faults, not the per-chat limit (covered below).
    fake.enforce_chat_qps(false);
    let mut tasks = Vec::new();
    for i in 0..20 {
        let api = Arc::clone(&api);
        tasks.push(tokio::spawn(async move {
            api.send(&chat(), &card(&format!("m{i}")), &format!("u-{i}"))
                .await
        }));
    }
    for t in tasks {
        t.await.expect("join").expect("every send succeeds");
    }
    let mut texts: Vec<String> = fake.sent_cards().iter().map(|r| r.card_text()).collect();
    texts.sort();
    let mut expected: Vec<String> = (0..20).map(|i| format!("m{i}")).collect();
    expected.sort();
    assert_eq!(texts, expected, "each message exactly once");
}

#[tokio::test]
async fn permanent_codes_are_not_retried() {
    let fake = FakeFeishu::start().await;
    let api = Api::with_retry(fake.config(), fast_retry());
    let id = api.send(&chat(), &card("a"), "u-a").await.expect("send");
    fake.delete_message(&id);
    let before = fake.api_attempts();
    let err = api
        .patch(&id, &card("b"))
        .await
        .expect_err("recalled message");
    assert_eq!(err.code(), Some(230011));
    assert!(err.is_permanent());
    assert_eq!(
        fake.api_attempts() - before,
        1,
        "no retry on a permanent code"
    );
}

#[tokio::test]
async fn persistent_outage_gives_up_after_the_budget() {
    let fake = FakeFeishu::start().await;
    let api = Api::with_retry(fake.config(), fast_retry());
    api.tenant_token().await.expect("token");
    fake.fail_for(Duration::from_secs(60));
    let err = api
        .send(&chat(), &card("a"), "u-a")
        .await
        .expect_err("outage");
    assert!(
        matches!(err, FeishuError::GaveUp { attempts: 5, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("HTTP 503"), "{err}");
}

#[tokio::test]
async fn bad_credentials_report_feishu_code() {
    let fake = FakeFeishu::start().await;
    let mut config = fake.config();
    config.app_secret = "wrong".into();
    let err = Api::with_retry(config, fast_retry())
        .tenant_token()
        .await
        .expect_err("bad secret");
    assert_eq!(err.code(), Some(10014));
    assert!(err.to_string().contains("app secret invalid"), "{err}");
}

#[tokio::test]
async fn oversized_card_is_refused_before_sending() {
    let fake = FakeFeishu::start().await;
    let api = Api::with_retry(fake.config(), fast_retry());
    let big = Card::new("big", Template::Blue).push(Element::markdown("x".repeat(40_000)));
    let err = api.send(&chat(), &big, "u").await.expect_err("too large");
    assert!(matches!(err, FeishuError::CardTooLarge(n) if n > 40_000));
    assert_eq!(fake.api_attempts(), 0);
}

/// A small real PNG (one red pixel), as the renderer's output would be.
fn tiny_png() -> Vec<u8> {
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, 1, 1);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut w = enc.write_header().unwrap();
    w.write_image_data(&[255, 0, 0]).unwrap();
    w.finish().unwrap();
    out
}

#[tokio::test]
async fn an_image_upload_returns_the_key_feishu_issued() {
    let fake = FakeFeishu::start().await;
    let api = Api::with_retry(fake.config(), fast_retry());
    let png = tiny_png();
    let key = api.upload_image(&png).await.expect("upload");
    let uploads = fake.uploaded_images();
    assert_eq!(uploads.len(), 1);
    assert_eq!(uploads[0].image_key, key);
    assert_eq!(uploads[0].image_type, "message");
    assert_eq!(uploads[0].bytes, png);
    assert!(
        uploads[0].part_head.contains("Content-Type: image/png"),
        "{}",
        uploads[0].part_head
    );
    // The key shows in a card the fake accepts; a key it never issued is refused.
    let with = Card::new("Screen", Template::Blue).push(Element::image(&key, "screen"));
    api.send(&chat(), &with, "u-img-1")
        .await
        .expect("card with the key");
    let bogus = Card::new("Screen", Template::Blue).push(Element::image("img_v3_404", "screen"));
    let err = api.send(&chat(), &bogus, "u-img-2").await.unwrap_err();
    assert_eq!(err.code(), Some(230099), "{err}");
}

#[tokio::test]
async fn image_uploads_are_refused_as_feishu_documents() {
    let fake = FakeFeishu::start().await;
    let api = Api::with_retry(fake.config(), fast_retry());
    // Refused before any request: over Feishu's 10 MB.
    let big = vec![0u8; clawmux::feishu::api::MAX_IMAGE_BYTES + 1];
    assert!(matches!(
        api.upload_image(&big).await,
        Err(FeishuError::ImageTooLarge(_))
    ));
    assert!(fake.uploaded_images().is_empty());
    for (bytes, code) in [(Vec::new(), 234010), (b"not an image".to_vec(), 234011)] {
        let err = api.upload_image(&bytes).await.unwrap_err();
        assert_eq!(err.code(), Some(code), "{err}");
    }
    // A PNG over 12000 pixels wide (its header is enough for Feishu).
    let mut wide = tiny_png();
    wide[16..20].copy_from_slice(&12_001u32.to_be_bytes());
    assert_eq!(
        api.upload_image(&wide).await.unwrap_err().code(),
        Some(234039)
    );
    // An expired token is refreshed once, as for every call.
    fake.expire_tokens();
    api.upload_image(&tiny_png())
        .await
        .expect("after a token refresh");
    assert_eq!(fake.uploaded_images().len(), 1);
}

/// Feishu answers a stale tenant token with 99991665 as well as 99991663:
/// both fetch a new token and the call goes through.
#[tokio::test]
async fn an_invalid_tenant_token_99991665_is_refreshed() {
    let fake = FakeFeishu::start().await;
    fake.set_invalid_token_code(99991665);
    let api = Api::with_retry(fake.config(), fast_retry());
    let id = api.send(&chat(), &card("a"), "u-a").await.expect("send");
    fake.expire_tokens();
    api.patch(&id, &card("b"))
        .await
        .expect("patch after a 99991665");
    assert_eq!(fake.token_requests(), 2);
}

/// A token past its `expire` is refused as Feishu refuses it; the client
/// refreshes it before then (its margin), so no call fails.
#[tokio::test]
async fn a_token_past_its_expire_is_refused_and_never_used() {
    let fake = FakeFeishu::start().await;
    // Shorter than the refresh margin: every call fetches a new one.
    fake.set_token_expire(1);
    let api = Api::with_retry(fake.config(), fast_retry());
    api.send(&chat(), &card("a"), "u-a").await.expect("send");
    let stale = reqwest::Client::new()
        .post(format!(
            "{}/open-apis/im/v1/messages?receive_id_type=chat_id",
            fake.base_url()
        ))
        .bearer_auth("t-1")
        .json(&serde_json::json!({"receive_id": "oc_1", "msg_type": "interactive", "content": "{}", "uuid": "x"}))
        .send();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let answer: serde_json::Value = stale.await.expect("POST").json().await.expect("json");
    assert_eq!(answer["code"], 99991663, "{answer}");
    api.send(&chat(), &card("b"), "u-b")
        .await
        .expect("send with a fresh token");
}

/// More than 5 sends a second to one chat: the local Feishu answers the
/// sixth with 230020 (the per-chat limit), which the client backs off and
/// retries; the courier's pacer never gets there.
#[tokio::test]
async fn a_sixth_send_in_a_second_to_one_chat_is_limited_and_retried() {
    let fake = FakeFeishu::start().await;
    let api = Api::with_retry(
        fake.config(),
        RetryPolicy {
            max_attempts: 6,
            base_delay: Duration::from_millis(300),
            max_delay: Duration::from_secs(1),
        },
    );
    for i in 0..6 {
        api.send(&chat(), &card("x"), &format!("u-{i}"))
            .await
            .expect("send");
    }
    assert!(fake.chat_limited() >= 1, "the sixth send was not limited");
    assert_eq!(fake.sent_cards().len(), 6);
}

/// A message uuid longer than Feishu's 50 characters is a field error
/// (99992402): refused once, as permanent, not retried.
#[tokio::test]
async fn a_message_uuid_over_50_chars_is_refused_for_good() {
    let fake = FakeFeishu::start().await;
    let api = Api::with_retry(fake.config(), fast_retry());
    api.tenant_token().await.expect("token");
    let err = api
        .send(&chat(), &card("a"), &"u".repeat(51))
        .await
        .expect_err("refused");
    assert_eq!(err.code(), Some(99992402), "{err}");
    assert!(err.is_permanent(), "{err}");
    // The token, then one attempt.
    assert_eq!(fake.api_attempts(), 2);
    api.send(&chat(), &card("b"), &"u".repeat(50))
        .await
        .expect("50 characters are fine");
}

/// Feishu takes 5 updates a second to one message and answers more with
/// 230020. Twelve updates to one message handed to the courier at once
/// are paced: every one lands, none is refused. The same kind of burst
/// sent straight through the API (no pacer, one attempt each) is refused
/// past the fifth.
#[tokio::test]
async fn a_burst_of_updates_to_one_message_is_paced_and_an_unpaced_one_refused() {
    use clawmux::bridge::channels::feishu::FeishuCourier;
    use clawmux::bridge::channels::outbox::Courier;
    use clawmux::store::state::{CardHandle, OutboxEntry, OutboxOp};
    use futures_util::future::join_all;

    let fake = FakeFeishu::start().await;
    let once = RetryPolicy {
        max_attempts: 1,
        ..fast_retry()
    };
    let api = Arc::new(Api::with_retry(fake.config(), once));
    let id = api.send(&chat(), &card("v0"), "u-0").await.expect("send");
    let courier = FeishuCourier::new(Arc::clone(&api));
    let entries: Vec<OutboxEntry> = (1..=12)
        .map(|i| OutboxEntry {
            uuid: format!("p-{i}"),
            op: OutboxOp::Patch {
                handle: "h-1".parse::<CardHandle>().unwrap(),
            },
            message: Some(clawmux::message::Message::new(
                format!("v{i}"),
                clawmux::message::Tone::Info,
            )),
            created_ms: 0,
        })
        .collect();
    let paced = join_all(entries.iter().map(|e| courier.deliver(e, Some(&id)))).await;
    for (i, r) in paced.iter().enumerate() {
        assert!(r.is_ok(), "update {i}: {r:?}");
    }
    assert_eq!(fake.patch_limited(), 0);
    let patches = || {
        fake.sent_cards()
            .iter()
            .filter(|r| r.kind == Kind::Patch)
            .count()
    };
    assert_eq!(patches(), 12);

    let cards: Vec<Card> = (0..8).map(|i| card(&format!("w{i}"))).collect();
    let unpaced = join_all(cards.iter().map(|c| api.patch(&id, c))).await;
    let refused = unpaced
        .iter()
        .filter(|r| r.as_ref().err().and_then(FeishuError::code) == Some(230020))
        .count();
    assert!(refused >= 3, "{unpaced:?}");
    assert_eq!(fake.patch_limited() as usize, refused);
    assert_eq!(patches(), 12 + 8 - refused);
}

/// A card in Chinese and English is taken; multi-language fields Feishu
/// would not show as meant are refused (230099), each for its reason.
#[tokio::test]
async fn cards_in_two_languages_are_taken_and_bad_locales_refused() {
    use clawmux::i18n::Text;
    use serde_json::json;
    let fake = FakeFeishu::start().await;
    let api = Api::with_retry(fake.config(), fast_retry());
    let both = Card::new(Text::both("Status", "状态"), Template::Blue)
        .push(Element::markdown("`ls` output"));
    api.send(&chat(), &both, "u-i18n-ok").await.expect("taken");
    let sent = &fake.sent_cards()[0].card;
    assert_eq!(sent["config"]["locales"], json!(["zh_cn", "en_us"]));
    assert_eq!(sent["header"]["title"]["i18n_content"]["zh_cn"], "状态");
    let text = |i18n: Value, locales: Value| {
        json!({"schema": "2.0", "config": {"update_multi": true, "locales": locales},
            "header": {"title": {"tag": "plain_text", "content": "Status", "i18n_content": i18n},
                "template": "blue"},
            "body": {"elements": []}})
    };
    let bad = [
        (
            "unknown locale",
            text(
                json!({"zh_CN": "状态", "en_us": "Status"}),
                json!(["zh_cn", "en_us"]),
            ),
        ),
        (
            "a declared locale missing",
            text(json!({"en_us": "Status"}), json!(["zh_cn", "en_us"])),
        ),
        (
            "unknown declared locale",
            text(json!({"en_us": "Status"}), json!(["en"])),
        ),
        (
            "locales repeated",
            text(json!({"en_us": "Status"}), json!(["en_us", "en_us"])),
        ),
        (
            "a value not a string",
            text(
                json!({"en_us": 1, "zh_cn": "状态"}),
                json!(["zh_cn", "en_us"]),
            ),
        ),
    ];
    // A chat each: six sends to one chat in a second would be rate-limited.
    for (i, (why, card)) in bad.into_iter().enumerate() {
        let to = ReceiveId::ChatId(format!("oc_i18n_{i}"));
        let err = api
            .send(&to, &card, &format!("u-i18n-{i}"))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Some(230099), "{why}: {err}");
    }
    let on_a_button = json!({"schema": "2.0", "config": {"update_multi": true},
        "body": {"elements": [{"tag": "hr", "i18n_content": {"en_us": "x"}}]}});
    let to = ReceiveId::ChatId("oc_i18n_hr".into());
    let err = api.send(&to, &on_a_button, "u-i18n-hr").await.unwrap_err();
    assert_eq!(err.code(), Some(230099), "{err}");
    assert_eq!(
        fake.sent_cards().len(),
        1,
        "only the good card was recorded"
    );
}

/// A card for a person (an approver told of a prompt no chat is there
/// for) is sent to them by open_id, not as a chat's.
#[tokio::test]
async fn a_card_for_a_person_goes_by_their_open_id() {
    use clawmux::bridge::channels::feishu::FeishuCourier;
    use clawmux::bridge::channels::outbox::Courier;
    use clawmux::store::state::{ChatTarget, OutboxEntry, OutboxOp};

    let fake = FakeFeishu::start().await;
    let api = Arc::new(Api::with_retry(fake.config(), fast_retry()));
    let courier = FeishuCourier::new(api);
    let entry = OutboxEntry {
        uuid: "u-person".into(),
        op: OutboxOp::Send {
            target: ChatTarget::User {
                id: "ou_boss".parse().unwrap(),
            },
            handle: "h-p".parse().unwrap(),
            reply_to: None,
            image: None,
        },
        message: Some(clawmux::message::Message::new(
            "demo asks",
            clawmux::message::Tone::Info,
        )),
        created_ms: 0,
    };
    courier.deliver(&entry, None).await.expect("sent");
    let sent = fake.sent_cards();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].target, "open_id:ou_boss");
}
