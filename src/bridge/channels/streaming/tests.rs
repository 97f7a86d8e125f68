//! The stream task on a recording sink: the operation recorded before a
//! crash is sent again as it was, a refused CardKit falls back to patching,
//! and the console prints only what is new.

use std::sync::Mutex;

use super::*;
use crate::store::state::ChatTarget;

/// What the sink was asked, in order.
#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<String>>,
    refuse_create: bool,
    /// Answers for the coming text updates, in order (then Ok).
    text_answers: Mutex<Vec<StreamError>>,
    /// Every text update fails with a 5xx.
    text_down: bool,
    /// Every create times out.
    create_down: bool,
}

impl Recorder {
    fn log(&self, call: String) {
        self.calls.lock().unwrap().push(call);
    }
    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }
}

impl StreamSink for Arc<Recorder> {
    async fn create(&self, _card: &Value) -> Result<String, StreamError> {
        if self.create_down {
            self.log("create timed out".into());
            return Err(StreamError::Transient("no answer within 5 s".into()));
        }
        if self.refuse_create {
            self.log("create refused".into());
            return Err(StreamError::Fallback("no scope".into()));
        }
        self.log("create".into());
        Ok("card-1".into())
    }
    async fn send_entity(
        &self,
        _s: &AnswerStream,
        card_id: &str,
        uuid: &str,
    ) -> Result<String, StreamError> {
        self.log(format!("send {card_id} {uuid}"));
        Ok("om_1".into())
    }
    async fn send_card(
        &self,
        _s: &AnswerStream,
        card: &Value,
        uuid: &str,
    ) -> Result<String, StreamError> {
        let text = card.pointer("/body/elements/0/content").cloned();
        self.log(format!("send_card {uuid} {}", text.unwrap_or_default()));
        Ok("om_2".into())
    }
    async fn text(
        &self,
        _card_id: &str,
        text: &str,
        sequence: u32,
        uuid: &str,
    ) -> Result<(), StreamError> {
        self.log(format!("text {sequence} {uuid} {text:?}"));
        if self.text_down {
            return Err(StreamError::Transient("HTTP 503".into()));
        }
        let mut answers = self.text_answers.lock().unwrap();
        if !answers.is_empty() {
            return Err(answers.remove(0));
        }
        Ok(())
    }
    async fn reopen(&self, _card_id: &str, sequence: u32, uuid: &str) -> Result<(), StreamError> {
        self.log(format!("reopen {sequence} {uuid}"));
        Ok(())
    }
    async fn close(
        &self,
        _card_id: &str,
        _summary: &str,
        sequence: u32,
        uuid: &str,
    ) -> Result<(), StreamError> {
        self.log(format!("close {sequence} {uuid}"));
        Ok(())
    }
    async fn full(
        &self,
        _card_id: &str,
        card: &Value,
        sequence: u32,
        uuid: &str,
    ) -> Result<(), StreamError> {
        let text = card.pointer("/body/elements/0/content").cloned();
        self.log(format!(
            "full {sequence} {uuid} {}",
            text.unwrap_or_default()
        ));
        Ok(())
    }
    async fn patch(&self, message_id: &str, card: &Value) -> Result<(), StreamError> {
        let text = card.pointer("/body/elements/0/content").cloned();
        self.log(format!("patch {message_id} {}", text.unwrap_or_default()));
        Ok(())
    }
}

fn stream() -> AnswerStream {
    AnswerStream::new(
        "job-1".parse().unwrap(),
        ChatTarget::Chat {
            id: crate::store::ids::chat("oc_1"),
        },
        None,
        "demo: hi".into(),
        0,
    )
}

async fn run_until_done(shared: &SharedState, sink: Arc<Recorder>) {
    let task = tokio::spawn(run(shared.clone(), sink));
    let deadline = Instant::now() + Duration::from_secs(20);
    while shared.read(|s| !s.streams.is_empty()) {
        assert!(Instant::now() < deadline, "the stream never ended");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    task.abort();
}

#[tokio::test]
async fn an_operation_recorded_before_a_crash_is_sent_again_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let (shared, _) = SharedState::open(dir.path()).unwrap();
    // As a crash left it: the entity shown, a text operation written down
    // (it may or may not have reached Feishu), the turn over.
    let mut s = stream();
    s.card_id = Some("card-1".into());
    s.message_id = Some("om_1".into());
    s.shown = "one".into();
    s.sequence = 4;
    s.in_flight = Some(StreamOp::Text {
        sequence: 4,
        text: "one\ntwo".into(),
    });
    s.final_text = Some("one\ntwo\nthree".into());
    let uuid = s.uuid.clone();
    shared.update(|st| st.streams.insert(s.job.clone(), s));
    let sink = Arc::new(Recorder::default());
    run_until_done(&shared, Arc::clone(&sink)).await;
    assert_eq!(
        sink.calls(),
        [
            format!("text 4 {uuid}-4 \"one\\ntwo\""),
            format!("text 5 {uuid}-5 \"one\\ntwo\\nthree\""),
            format!("close 6 {uuid}-6"),
        ],
        "the same operation again, then the final text, then one close"
    );
}

#[tokio::test]
async fn a_refused_card_entity_becomes_a_plain_card_sent_with_its_final_text() {
    let dir = tempfile::tempdir().unwrap();
    let (shared, _) = SharedState::open(dir.path()).unwrap();
    let mut s = stream();
    s.text = "partial".into();
    s.final_text = Some("the whole answer".into());
    let uuid = s.uuid.clone();
    shared.update(|st| st.streams.insert(s.job.clone(), s));
    let sink = Arc::new(Recorder {
        refuse_create: true,
        ..Default::default()
    });
    run_until_done(&shared, Arc::clone(&sink)).await;
    assert_eq!(
        sink.calls(),
        [
            "create refused".to_string(),
            format!("send_card {uuid}-p \"the whole answer\""),
        ]
    );
}

#[tokio::test]
async fn streaming_timed_out_is_turned_on_again_and_the_text_resent() {
    let dir = tempfile::tempdir().unwrap();
    let (shared, _) = SharedState::open(dir.path()).unwrap();
    let mut s = stream();
    s.card_id = Some("card-1".into());
    s.message_id = Some("om_1".into());
    s.shown = "one".into();
    s.sequence = 3;
    s.final_text = Some("one\ntwo".into());
    let uuid = s.uuid.clone();
    shared.update(|st| st.streams.insert(s.job.clone(), s));
    let sink = Arc::new(Recorder {
        text_answers: Mutex::new(vec![StreamError::Closed("200850 timeout".into())]),
        ..Default::default()
    });
    run_until_done(&shared, Arc::clone(&sink)).await;
    assert_eq!(
        sink.calls(),
        [
            format!("text 4 {uuid}-4 \"one\\ntwo\""),
            format!("reopen 5 {uuid}-5"),
            format!("text 6 {uuid}-6 \"one\\ntwo\""),
            format!("close 7 {uuid}-7"),
        ],
        "on again, the text again under a new sequence, one close; never a patch"
    );
}

#[tokio::test]
async fn failing_updates_end_in_one_full_update_soon_after_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    let (shared, _) = SharedState::open(dir.path()).unwrap();
    let mut s = stream();
    s.card_id = Some("card-1".into());
    s.message_id = Some("om_1".into());
    s.shown = "one".into();
    s.sequence = 2;
    s.final_text = Some("one\ntwo".into());
    let uuid = s.uuid.clone();
    shared.update(|st| st.streams.insert(s.job.clone(), s));
    let sink = Arc::new(Recorder {
        text_down: true,
        ..Default::default()
    });
    run_until_done(&shared, Arc::clone(&sink)).await;
    let calls = sink.calls();
    let (last, before) = calls.split_last().unwrap();
    assert!(
        before.iter().all(|c| c.starts_with("text 3 ")),
        "the same text retried, nothing else: {calls:?}"
    );
    assert!(
        before.len() < MAX_FAILURES as usize,
        "given up within the grace: {calls:?}"
    );
    assert_eq!(last, &format!("full 4 {uuid}-4 \"one\\ntwo\""));
}

#[tokio::test]
async fn a_card_never_shown_by_the_turns_end_is_dropped_not_sent_late() {
    let dir = tempfile::tempdir().unwrap();
    let (shared, _) = SharedState::open(dir.path()).unwrap();
    let mut s = stream();
    s.text = "partial".into();
    s.final_text = Some("the whole answer".into());
    shared.update(|st| st.streams.insert(s.job.clone(), s));
    let sink = Arc::new(Recorder {
        create_down: true,
        ..Default::default()
    });
    run_until_done(&shared, Arc::clone(&sink)).await;
    let calls = sink.calls();
    assert!(
        calls.iter().all(|c| c == "create timed out"),
        "no card sent after the result: {calls:?}"
    );
    assert!(calls.len() < MAX_FAILURES as usize, "{calls:?}");
}

#[test]
fn streaming_is_turned_on_again_before_feishu_ends_it() {
    let mut s = stream();
    s.card_id = Some("card-1".into());
    s.message_id = Some("om_1".into());
    s.text = "more".into();
    s.sequence = 9;
    let mut p = Pace::new();
    assert_eq!(
        next_op(&s, &p, "more"),
        Some(StreamOp::Text {
            sequence: 10,
            text: "more".into()
        })
    );
    let Some(long_ago) = Instant::now().checked_sub(REOPEN_AFTER) else {
        return; // the clock is younger than the lifetime: nothing to test
    };
    p.streaming_on = Some(long_ago);
    assert_eq!(
        next_op(&s, &p, "more"),
        Some(StreamOp::Reopen { sequence: 10 })
    );
    assert!(REOPEN_AFTER < STREAMING_LIFETIME);
}

#[test]
fn the_console_prints_only_new_lines() {
    assert_eq!(console_delta("", "a\nb\n"), "│ a\n│ b\n");
    assert_eq!(console_delta("a\n", "a\nb\n"), "│ b\n");
    assert_eq!(
        console_delta("x\n", "a\n"),
        "├─ (redrawn)\n│ a\n",
        "rewritten: all of it, after the mark"
    );
}
