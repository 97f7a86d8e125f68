//! Delivers the outbox in order: one entry at a time, retried with backoff
//! while the failure is transient, dropped (and logged) when permanent. An
//! entry leaves the outbox only after delivery, so a crash resends it with
//! the same uuid and Feishu shows it once. The event log tells the operator
//! when deliveries start failing (`card_retry`) and when they work again
//! (`card_delivery_recovered`).

use std::future::Future;
use std::time::Duration;

use serde_json::json;
use tokio::time::Instant;

use crate::store::SharedState;
use crate::store::state::{OutboxEntry, OutboxOp};

/// First retry delay after a transient failure; doubles up to the cap.
const RETRY_FIRST: Duration = Duration::from_millis(500);
/// Longest wait between retries. It bounds how long cards sit after Feishu
/// is back: 30 s could add half a minute to a one-minute outage. Each
/// delivery attempt already spends 5-15 s in the API client's own retries
/// (6 tries with backoff, honouring rate-limit resets), so with 10 s an
/// outage still sees only about one request every 2-3 s.
const RETRY_CAP: Duration = Duration::from_secs(10);

/// Transient failures since the last successful delivery. A permanent
/// failure does not end it: Feishu answering is not cards getting through.
struct Outage {
    /// When the first failed attempt started.
    since: Instant,
    failed_attempts: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeliveryError {
    /// Worth retrying: network, 5xx, rate limits.
    #[error("{0}")]
    Transient(String),
    /// Never going to work: rejected card, deleted message, …
    #[error("{0}")]
    Permanent(String),
}

/// A channel that shows cards: the console or Feishu.
pub trait Courier: Send + Sync + 'static {
    /// Delivers one entry. For a patch, `message_id` is the id the card's
    /// send returned. Returns the message id of a sent card.
    fn deliver(
        &self,
        entry: &OutboxEntry,
        message_id: Option<&str>,
    ) -> impl Future<Output = Result<Option<String>, DeliveryError>> + Send;
}

/// Runs forever, delivering whatever the outbox holds.
pub async fn run(shared: SharedState, courier: impl Courier) {
    let mut delay = RETRY_FIRST;
    let mut outage: Option<Outage> = None;
    loop {
        let next = shared.read(|s| {
            s.outbox.front().cloned().map(|e| {
                let id = s.cards.get(e.op.handle()).cloned();
                (e, id)
            })
        });
        let Some((entry, message_id)) = next else {
            shared.outbox_ready().await;
            continue;
        };
        if matches!(entry.op, OutboxOp::Patch { .. }) && message_id.is_none() {
            // The card it patches was never delivered (dropped): nothing to update.
            finish(
                &shared,
                &entry,
                None,
                Some("the card to update was never delivered"),
            );
            continue;
        }
        // State writes are asynchronous: the entry (and the message ids of
        // the cards before it) must be on disk before the card goes out, or
        // a crash could lose the entry and a restart make the card anew
        // under another uuid. Returns at once when nothing changed.
        shared.flush().await;
        let attempted = Instant::now();
        match courier.deliver(&entry, message_id.as_deref()).await {
            Ok(sent_id) => {
                delay = RETRY_FIRST;
                finish(&shared, &entry, sent_id, None);
                if let Some(o) = outage.take() {
                    // `queued`: cards still waiting behind this one.
                    let queued = shared.read(|s| s.outbox.len());
                    shared.log.record(
                        "card_delivery_recovered",
                        json!({"uuid": entry.uuid, "outage_ms": o.since.elapsed().as_millis() as u64,
                               "failed_attempts": o.failed_attempts, "queued": queued}),
                    );
                }
            }
            Err(DeliveryError::Permanent(why)) => {
                delay = RETRY_FIRST;
                finish(&shared, &entry, None, Some(&why));
            }
            Err(DeliveryError::Transient(why)) => {
                outage
                    .get_or_insert(Outage {
                        since: attempted,
                        failed_attempts: 0,
                    })
                    .failed_attempts += 1;
                shared.log.record("card_retry", json!({"uuid": entry.uuid, "error": why, "retry_in_ms": delay.as_millis() as u64}));
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(RETRY_CAP);
            }
        }
    }
}

/// Removes a delivered (or undeliverable) entry, records the message id.
/// A patch whose card changed while it was in flight stays for another round.
fn finish(
    shared: &SharedState,
    entry: &OutboxEntry,
    sent_id: Option<String>,
    failure: Option<&str>,
) {
    shared.update(|s| {
        let Some(front) = s.outbox.front() else {
            return;
        };
        if front.uuid != entry.uuid {
            return;
        }
        if failure.is_none() && front.card != entry.card {
            return;
        }
        s.outbox.pop_front();
        if let Some(id) = sent_id {
            s.cards.insert(entry.op.handle().to_string(), id);
        }
    });
    let handle = entry.op.handle();
    match failure {
        None => shared.log.record(
            "card",
            json!({"uuid": entry.uuid, "handle": handle, "op": op_name(&entry.op)}),
        ),
        Some(why) => shared.log.record(
            "card_dropped",
            json!({"uuid": entry.uuid, "handle": handle, "error": why}),
        ),
    }
}

fn op_name(op: &OutboxOp) -> &'static str {
    match op {
        OutboxOp::Send {
            reply_to: Some(_), ..
        } => "reply",
        OutboxOp::Send { .. } => "send",
        OutboxOp::Patch { .. } => "patch",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::state::ChatTarget;
    use std::sync::{Arc, Mutex};

    /// (uuid, message id it patched)
    type Delivered = Vec<(String, Option<String>)>;

    /// Fails transiently `fail` times, then records what it delivered.
    #[derive(Clone, Default)]
    struct Flaky {
        fail: Arc<Mutex<u32>>,
        seen: Arc<Mutex<Delivered>>,
    }

    impl Courier for Flaky {
        async fn deliver(
            &self,
            e: &OutboxEntry,
            id: Option<&str>,
        ) -> Result<Option<String>, DeliveryError> {
            {
                let mut fail = self.fail.lock().unwrap();
                if *fail > 0 {
                    *fail -= 1;
                    return Err(DeliveryError::Transient("503".into()));
                }
            }
            self.seen
                .lock()
                .unwrap()
                .push((e.uuid.clone(), id.map(String::from)));
            Ok(Some(format!("om_{}", e.uuid)))
        }
    }

    fn entry(uuid: &str, op: OutboxOp) -> OutboxEntry {
        OutboxEntry {
            uuid: uuid.into(),
            op,
            card: json!({}),
            text: String::new(),
            created_ms: 0,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn delivers_in_order_through_transient_failures() {
        let dir = private_tempdir();
        let (shared, _) = SharedState::open(dir.path()).unwrap();
        let courier = Flaky::default();
        *courier.fail.lock().unwrap() = 3;
        shared.update(|s| {
            let send = OutboxOp::Send {
                target: ChatTarget::Console,
                handle: "h1".into(),
                reply_to: None,
            };
            s.outbox.push_back(entry("a", send));
            s.outbox.push_back(entry(
                "b",
                OutboxOp::Patch {
                    handle: "h1".into(),
                },
            ));
            s.outbox.push_back(entry(
                "c",
                OutboxOp::Patch {
                    handle: "never-sent".into(),
                },
            ));
        });
        let task = tokio::spawn(run(shared.clone(), courier.clone()));
        while shared.read(|s| !s.outbox.is_empty()) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        task.abort();
        let seen = courier.seen.lock().unwrap().clone();
        assert_eq!(
            seen,
            [
                ("a".to_string(), None),
                ("b".to_string(), Some("om_a".to_string()))
            ]
        );
        let kinds: Vec<String> = records(dir.path()).into_iter().map(|r| r.kind).collect();
        assert_eq!(
            kinds,
            [
                "card_retry",
                "card_retry",
                "card_retry",
                "card",
                "card_delivery_recovered",
                "card",
                "card_dropped"
            ]
        );
    }

    /// A temp dir already 0700, so opening the state in it logs nothing
    /// about its mode.
    fn private_tempdir() -> tempfile::TempDir {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        dir
    }

    fn records(dir: &std::path::Path) -> Vec<crate::store::event_log::EventRecord> {
        crate::store::event_log::read_all(dir).unwrap().records
    }

    fn send(uuid: &str) -> OutboxEntry {
        let op = OutboxOp::Send {
            target: ChatTarget::Console,
            handle: format!("h-{uuid}"),
            reply_to: None,
        };
        entry(uuid, op)
    }

    #[tokio::test(start_paused = true)]
    async fn a_long_outage_backs_off_to_the_cap_and_its_end_is_logged_once() {
        let dir = private_tempdir();
        let (shared, _) = SharedState::open(dir.path()).unwrap();
        let courier = Flaky::default();
        *courier.fail.lock().unwrap() = 8;
        shared.update(|s| s.outbox.extend([send("a"), send("b")]));
        let task = tokio::spawn(run(shared.clone(), courier.clone()));
        while shared.read(|s| !s.outbox.is_empty()) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        // A later delivery that works at once is no recovery.
        shared.update(|s| s.outbox.push_back(send("c")));
        while shared.read(|s| !s.outbox.is_empty()) {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        task.abort();

        let log = records(dir.path());
        let waits: Vec<u64> = log
            .iter()
            .filter(|r| r.kind == "card_retry")
            .map(|r| r.fields["retry_in_ms"].as_u64().unwrap())
            .collect();
        assert_eq!(waits, [500, 1000, 2000, 4000, 8000, 10000, 10000, 10000]);
        let recovered: Vec<_> = log
            .iter()
            .filter(|r| r.kind == "card_delivery_recovered")
            .collect();
        assert_eq!(recovered.len(), 1, "{log:?}");
        let fields = &recovered[0].fields;
        // The courier answers at once, so the outage is the sum of the waits.
        assert_eq!(fields["outage_ms"], waits.iter().sum::<u64>());
        assert_eq!(fields["failed_attempts"], 8);
        assert_eq!(fields["uuid"], "a");
        assert_eq!(fields["queued"], 1, "b still waits");
        let kinds: Vec<&str> = log.iter().map(|r| r.kind.as_str()).collect();
        assert_eq!(
            kinds[8..],
            ["card", "card_delivery_recovered", "card", "card"],
            "the end of the outage follows the first card through"
        );
    }
}
