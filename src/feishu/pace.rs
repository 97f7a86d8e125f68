//! Send pacing within Feishu's limits: at most 5 messages a second to one
//! chat (shared by every bot in it, so we stay at it, not over), and 50 a
//! second for the whole app. A sliding window of send times per key; a
//! caller waits until its send fits both windows. Time is tokio's, so tests
//! run it paused.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use tokio::time::{Duration, Instant};

/// Messages one chat takes per [`WINDOW`].
pub const PER_CHAT_PER_WINDOW: usize = 5;
/// Messages the app sends per [`WINDOW`], all chats together.
pub const PER_APP_PER_WINDOW: usize = 50;
/// The window both limits count in.
pub const WINDOW: Duration = Duration::from_secs(1);
/// Chats whose recent sends are remembered; the least recently used is
/// forgotten beyond this (a forgotten chat has sent nothing for a while).
pub const MAX_TRACKED_CHATS: usize = 1024;

#[derive(Default)]
struct Windows {
    app: VecDeque<Instant>,
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

    /// Waits until a message to `key` (a chat id, or a message id for
    /// updates) fits both limits, and counts it.
    pub async fn wait(&self, key: &str) {
        loop {
            let now = Instant::now();
            let until = {
                let mut w = self.windows.lock().unwrap_or_else(|e| e.into_inner());
                let app_at = free_at(&mut w.app, PER_APP_PER_WINDOW, now);
                if !w.chats.contains_key(key) && w.chats.len() >= MAX_TRACKED_CHATS {
                    forget_idle(&mut w.chats, now);
                }
                let chat = w.chats.entry(key.to_string()).or_default();
                let chat_at = free_at(chat, PER_CHAT_PER_WINDOW, now);
                match app_at.max(chat_at) {
                    Some(at) => at,
                    None => {
                        chat.push_back(now);
                        w.app.push_back(now);
                        return;
                    }
                }
            };
            tokio::time::sleep_until(until).await;
        }
    }
}

/// Drops sends older than the window; when the window is full, the time
/// its oldest send leaves it.
fn free_at(sent: &mut VecDeque<Instant>, limit: usize, now: Instant) -> Option<Instant> {
    while sent.front().is_some_and(|t| *t + WINDOW <= now) {
        sent.pop_front();
    }
    (sent.len() >= limit).then(|| sent.front().map_or(now, |t| *t + WINDOW))
}

/// Forgets chats with nothing in their window; if all are busy, the one
/// whose last send is oldest.
fn forget_idle(chats: &mut HashMap<String, VecDeque<Instant>>, now: Instant) {
    chats.retain(|_, sent| sent.back().is_some_and(|t| *t + WINDOW > now));
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
            p.wait(k).await;
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
                .filter(|x| **x >= from && **x < from + WINDOW)
                .count()
        };
        assert_eq!(within(Duration::ZERO), 5);
        assert_eq!(within(WINDOW), 5);
        assert_eq!(t[5], WINDOW);
        assert_eq!(t[10], 2 * WINDOW);
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
            p.wait(&format!("k{i}")).await;
            tokio::time::advance(Duration::from_millis(30)).await;
        }
        let n = p.windows.lock().unwrap().chats.len();
        assert!(n <= MAX_TRACKED_CHATS, "{n}");
    }
}
