//! Send pacing within Feishu's limits (Server API > Rate limits, and the
//! send, reply and update pages): at most 5 messages a second to one chat
//! (shared by every bot in it) and 5 updates a second to one message
//! (Feishu answers both with 230020), 50 a second for the whole app, and
//! 1000 a minute per API (send, reply, update…). A sliding window of send
//! times per key; a caller waits until its send fits every window. The
//! per-key window is a little longer than Feishu's second
//! ([`ARRIVAL_MARGIN`]), so calls that leave in step but arrive out of
//! step still fit. Time is tokio's, so tests run it paused.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use tokio::time::{Duration, Instant};

/// Messages one chat takes per [`WINDOW`].
pub const PER_CHAT_PER_WINDOW: usize = 5;
/// Messages the app sends per [`WINDOW`], all chats together.
pub const PER_APP_PER_WINDOW: usize = 50;
/// The window both limits count in.
pub const WINDOW: Duration = Duration::from_secs(1);
/// Added to [`WINDOW`] for one chat's or one message's calls: Feishu counts
/// arrivals, we count departures, and the first call of a window can take
/// longer on the way (a token fetch, a slow connection) than the sixth.
/// 200 ms of slack costs a busy key one call in six.
pub const ARRIVAL_MARGIN: Duration = Duration::from_millis(200);
/// The window one chat's or one message's calls count in.
pub const KEY_WINDOW: Duration = WINDOW.saturating_add(ARRIVAL_MARGIN);
/// Calls one API takes per [`API_WINDOW`], all chats together.
pub const PER_API_PER_MINUTE: usize = 1000;
/// The window the per-API limit counts in.
pub const API_WINDOW: Duration = Duration::from_secs(60);
/// Chats whose recent sends are remembered; the least recently used is
/// forgotten beyond this (a forgotten chat has sent nothing for a while).
pub const MAX_TRACKED_CHATS: usize = 1024;

#[derive(Default)]
struct Windows {
    app: VecDeque<Instant>,
    /// Per API (a handful of names): at most [`PER_API_PER_MINUTE`] each.
    apis: HashMap<&'static str, VecDeque<Instant>>,
    chats: HashMap<String, VecDeque<Instant>>,
}

/// Shared pacing state. Cheap to share behind an `Arc`.
#[derive(Default)]
pub struct Pacer {
    windows: Mutex<Windows>,
}

impl Pacer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Waits until a call of `api` (its name: "send", "reply", "patch",
    /// …) to `key` (a chat id, or a message id for updates) fits every
    /// limit, and counts it.
    pub async fn wait(&self, api: &'static str, key: &str) {
        loop {
            let now = Instant::now();
            let until = {
                let mut w = self.windows.lock().unwrap_or_else(|e| e.into_inner());
                let app_at = free_at(&mut w.app, PER_APP_PER_WINDOW, WINDOW, now);
                let calls = w.apis.entry(api).or_default();
                let api_at = free_at(calls, PER_API_PER_MINUTE, API_WINDOW, now);
                if !w.chats.contains_key(key) && w.chats.len() >= MAX_TRACKED_CHATS {
                    forget_idle(&mut w.chats, now);
                }
                let chat = w.chats.entry(key.to_string()).or_default();
                let chat_at = free_at(chat, PER_CHAT_PER_WINDOW, KEY_WINDOW, now);
                match app_at.max(chat_at).max(api_at) {
                    Some(at) => at,
                    None => {
                        chat.push_back(now);
                        w.app.push_back(now);
                        w.apis.entry(api).or_default().push_back(now);
                        return;
                    }
                }
            };
            tokio::time::sleep_until(until).await;
        }
    }
}

/// Drops sends older than `window`; when it is full (`limit`), the time
/// its oldest send leaves it.
fn free_at(
    sent: &mut VecDeque<Instant>,
    limit: usize,
    window: Duration,
    now: Instant,
) -> Option<Instant> {
    while sent.front().is_some_and(|t| *t + window <= now) {
        sent.pop_front();
    }
    (sent.len() >= limit).then(|| sent.front().map_or(now, |t| *t + window))
}

/// Forgets chats with nothing in their window; if all are busy, the one
/// whose last send is oldest.
fn forget_idle(chats: &mut HashMap<String, VecDeque<Instant>>, now: Instant) {
    chats.retain(|_, sent| sent.back().is_some_and(|t| *t + KEY_WINDOW > now));
    if chats.len() >= MAX_TRACKED_CHATS
        && let Some(oldest) = chats
            .iter()
            .min_by_key(|(_, sent)| sent.back().copied())
            .map(|(k, _)| k.clone())
    {
        chats.remove(&oldest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Send times (from the start) of `n` sends to `key`, one after another.
    async fn times(p: &Pacer, keys: &[&str]) -> Vec<Duration> {
        let start = Instant::now();
        let mut out = Vec::new();
        for k in keys {
            p.wait("send", k).await;
            out.push(start.elapsed());
        }
        out
    }

    #[tokio::test(start_paused = true)]
    async fn one_chat_gets_five_a_second() {
        let p = Pacer::new();
        let t = times(&p, &["c"; 12]).await;
        let within = |from: Duration| {
            t.iter()
                .filter(|x| **x >= from && **x < from + KEY_WINDOW)
                .count()
        };
        assert_eq!(within(Duration::ZERO), 5);
        assert_eq!(within(KEY_WINDOW), 5);
        // Never six inside any second Feishu could count, however late
        // the first of them arrived (up to the margin).
        for w in t.windows(6) {
            assert!(w[5] - w[0] >= WINDOW + ARRIVAL_MARGIN, "{t:?}");
        }
        assert_eq!(t[5], KEY_WINDOW);
        assert_eq!(t[10], 2 * KEY_WINDOW);
    }

    #[tokio::test(start_paused = true)]
    async fn other_chats_are_not_held_up_and_the_app_limit_holds() {
        let p = Pacer::new();
        let busy = times(&p, &["c"; 5]).await;
        assert!(busy.iter().all(|d| d.is_zero()));
        // A different chat goes at once though "c" is full.
        assert_eq!(times(&p, &["d"]).await, [Duration::ZERO]);
        // 60 sends to 60 chats: 50 now (44 more after the 6 above), the rest a window later.
        let keys: Vec<String> = (0..60).map(|i| format!("x{i}")).collect();
        let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        let t = times(&p, &refs).await;
        assert_eq!(t.iter().filter(|d| d.is_zero()).count(), 44);
        assert!(t[44..].iter().all(|d| *d >= WINDOW));
    }

    #[tokio::test(start_paused = true)]
    async fn tracked_chats_are_bounded() {
        let p = Pacer::new();
        for i in 0..(MAX_TRACKED_CHATS + 10) {
            p.wait("send", &format!("k{i}")).await;
            tokio::time::advance(Duration::from_millis(30)).await;
        }
        let n = p.windows.lock().unwrap().chats.len();
        assert!(n <= MAX_TRACKED_CHATS, "{n}");
    }

    #[tokio::test(start_paused = true)]
    async fn one_api_takes_a_thousand_a_minute_and_another_api_is_not_held() {
        let p = Pacer::new();
        let start = Instant::now();
        // 1001 sends, each to its own chat (no chat limit), 50 a second.
        let mut last = Duration::ZERO;
        for i in 0..=PER_API_PER_MINUTE {
            p.wait("send", &format!("c{i}")).await;
            if i < PER_API_PER_MINUTE {
                last = start.elapsed();
            }
        }
        // 1000 fit in 20 s at 50/s; the 1001st waits for the first to
        // leave the minute window.
        assert_eq!(last, Duration::from_secs(19));
        assert_eq!(start.elapsed(), API_WINDOW);
        // Another API has its own minute.
        let before = Instant::now();
        p.wait("patch", "om_1").await;
        assert_eq!(before.elapsed(), Duration::ZERO);
    }
}
