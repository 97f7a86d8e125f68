//! The local Feishu server's CardKit: streaming expires and is turned on
//! again, bad operations get Feishu's codes, a fault holds one card only.

use clawmux::feishu::{Api, ReceiveId};
use serde_json::{Value, json};
use tokio::time::Duration;

use crate::support::fake_feishu::FakeFeishu;

fn card(elements: Value) -> Value {
    json!({"schema": "2.0", "config": {"streaming_mode": true, "update_multi": true},
           "body": {"elements": elements}})
}

fn answer_card() -> Value {
    card(json!([{"tag": "markdown", "element_id": "answer", "content": "…"}]))
}

fn code<T: std::fmt::Debug>(r: Result<T, clawmux::feishu::cardkit::CardKitError>) -> i64 {
    r.unwrap_err().error.code().expect("a Feishu code")
}

#[tokio::test]
async fn streaming_ends_with_its_lifetime_and_is_turned_on_again() {
    let fake = FakeFeishu::start().await;
    let api = Api::new(fake.config());
    let id = api.create_card_entity(&answer_card()).await.unwrap();
    fake.set_streaming_lifetime(Duration::ZERO);
    let uuids: Vec<String> = (0..6).map(|n| format!("t-{n}")).collect();
    let text = |seq: u32| api.stream_element_text(&id, "answer", "a", seq, &uuids[seq as usize]);
    assert_eq!(code(text(1).await), 200850, "timed out, once");
    assert_eq!(code(text(2).await), 300309, "closed since");
    fake.set_streaming_lifetime(Duration::from_secs(600));
    assert_eq!(code(text(3).await), 300309, "still closed");
    api.set_streaming(&id, true, None, 4, "u-4").await.unwrap();
    text(5).await.unwrap();
    assert_eq!(
        fake.entity(&id).unwrap().element_text("answer").unwrap(),
        "a"
    );
    // A full update replaces the card; streaming as its config says.
    let done = json!({"schema": "2.0", "config": {"update_multi": true},
        "body": {"elements": [{"tag": "markdown", "element_id": "answer", "content": "end"}]}});
    api.replace_card_entity(&id, &done, 6, "u-6").await.unwrap();
    let e = fake.entity(&id).unwrap();
    assert!(!e.streaming);
    assert_eq!(e.element_text("answer").unwrap(), "end");
    assert_eq!(e.ops.last().unwrap().kind, "full");
}

#[tokio::test]
async fn bad_operations_get_feishus_codes() {
    let fake = FakeFeishu::start().await;
    let api = Api::new(fake.config());
    let id = api.create_card_entity(&answer_card()).await.unwrap();
    let put = |text: &'static str, seq: u32, uuid: &'static str| {
        api.stream_element_text(&id, "answer", text, seq, uuid)
    };
    put("a", 5, "s-5").await.unwrap();
    let same = put("b", 5, "s-5b").await;
    assert_eq!(code(same), 300317, "sequence not increasing");
    let long_uuid = "u".repeat(65);
    let r = api
        .stream_element_text(&id, "answer", "b", 6, &long_uuid)
        .await;
    assert_eq!(code(r), 10002, "uuid over 64");
    let r = api.stream_element_text(&id, "answer", "", 7, "s-7").await;
    assert_eq!(code(r), 10002, "empty content");
    let r = api
        .stream_element_text("7355439197999", "answer", "b", 8, "s-8")
        .await;
    assert_eq!(code(r), 200740, "unknown entity");

    let twice = card(json!([
        {"tag": "markdown", "element_id": "a1", "content": "x"},
        {"tag": "markdown", "element_id": "a1", "content": "y"}
    ]));
    assert_eq!(code(api.create_card_entity(&twice).await), 300301);
    let bad_id = card(json!([{"tag": "markdown", "element_id": "1x", "content": "x"}]));
    assert_eq!(code(api.create_card_entity(&bad_id).await), 10002);
    let many: Vec<Value> = (0..201)
        .map(|_| json!({"tag": "markdown", "content": "x"}))
        .collect();
    assert_eq!(
        code(api.create_card_entity(&card(json!(many))).await),
        300305
    );
    let old = json!({"config": {"update_multi": true}, "elements": []});
    assert_eq!(code(api.create_card_entity(&old).await), 300303);

    // An entity is sent as a message once.
    let to = ReceiveId::ChatId("oc_1".into());
    api.send_card_entity(&to, None, &id, "m-1").await.unwrap();
    let again = api.send_card_entity(&to, None, &id, "m-2").await;
    assert_eq!(again.unwrap_err().code(), Some(230099));
}

#[tokio::test]
async fn a_card_fault_holds_that_card_only() {
    let fake = FakeFeishu::start().await;
    let api = Api::new(fake.config());
    let one = api.create_card_entity(&answer_card()).await.unwrap();
    let two = api.create_card_entity(&answer_card()).await.unwrap();
    let limit = Duration::from_secs(30);
    fake.cardkit_fault(
        Some(&one),
        None,
        crate::support::fake_feishu::CardFault::RateLimit,
        limit,
    );
    let r = api.stream_element_text(&one, "answer", "a", 1, "").await;
    let e = r.unwrap_err();
    assert_eq!(e.error.code(), Some(99991400));
    let reset = e.rate_limited.expect("the reset");
    assert!(
        reset > Duration::from_secs(28) && reset <= limit,
        "{reset:?}"
    );
    api.stream_element_text(&two, "answer", "a", 1, "")
        .await
        .unwrap();
}
