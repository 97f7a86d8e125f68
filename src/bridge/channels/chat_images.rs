//! Images users send from Feishu: fetched only for senders the bot
//! serves, saved privately under the project's workspace, and fetched off
//! the intake loop ([`Fetches`]), so one slow download holds up neither
//! another chat's messages nor any click, while each chat's messages still
//! reach the daemon in the order they were sent.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use tokio::task::JoinSet;

use crate::bridge::access::pairing::Pairing;
use crate::bridge::access::policy::{Decision, Policy};
use crate::bridge::channels::chat::ChatEvent;
use crate::feishu::api::Api;
use crate::store::SharedState;

/// Images fetched at once at most; one more is refused with a reason.
pub const MAX_FETCHES: usize = 8;

/// Messages of one chat held behind its images at most; more go on at
/// once (out of order rather than held without bound).
pub const MAX_HELD_PER_CHAT: usize = 64;

/// Saves images users send into their project's workspace, so the agent
/// can be pointed at them.
pub struct Images {
    pub api: Arc<Api>,
    pub shared: SharedState,
    /// An image is downloaded only from a sender, and in a chat, the bot
    /// serves (as admission will judge the message), so nobody else can
    /// put files in a workspace.
    pub policy: Policy,
    pub pairing: Pairing,
}

/// Where images from chat go, under the project workspace.
const IMAGES_DIR: &str = ".clawmux/images";

impl Images {
    /// Whether the access policy lets this message in (rate limit aside:
    /// admission counts it when it arrives).
    pub fn admits(&self, m: &crate::feishu::Message, mentions_bot: bool) -> bool {
        let paired = self.pairing.allowed().unwrap_or_default();
        let kind = super::feishu::chat_kind(m);
        let decision =
            self.policy
                .decide(&m.sender_open_id, kind, &m.chat_id, mentions_bot, &paired);
        decision == Decision::Allow
    }

    /// The text typed for an image message: where it was saved, or why not.
    pub async fn save(&self, m: &crate::feishu::Message, image_key: &str) -> String {
        let workspace = self.shared.read(|s| {
            s.chats
                .get(&m.chat_id)
                .and_then(|p| s.projects.get(p))
                .map(|r| r.workspace.clone())
        });
        let Some(workspace) = workspace else {
            return "(an image was sent, but this chat has no project to save it in)".into();
        };
        let bytes = match self.api.download_image(&m.message_id, image_key).await {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(error = %e, message_id = %m.message_id, "cannot download an image from chat");
                return format!("(an image was sent, but it could not be downloaded: {e})");
            }
        };
        let dir = std::path::Path::new(&workspace).join(IMAGES_DIR);
        let name: String = m
            .message_id
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
            .collect();
        let path = dir.join(format!("{name}.{}", image_ext(&bytes)));
        match write_private(&dir, &path, &bytes) {
            Ok(()) => format!("Image from chat saved at {}", path.display()),
            Err(e) => {
                tracing::warn!(error = %e, path = %path.display(), "cannot save an image from chat");
                format!("(an image was sent, but it could not be saved: {e})")
            }
        }
    }
}

/// The file extension an image's first bytes say.
fn image_ext(bytes: &[u8]) -> &'static str {
    match bytes {
        [0x89, b'P', b'N', b'G', ..] => "png",
        [0xff, 0xd8, 0xff, ..] => "jpg",
        [b'G', b'I', b'F', b'8', ..] => "gif",
        [
            b'R',
            b'I',
            b'F',
            b'F',
            _,
            _,
            _,
            _,
            b'W',
            b'E',
            b'B',
            b'P',
            ..,
        ] => "webp",
        _ => "bin",
    }
}

/// A 0700 directory and a 0600 file (what users send is private).
fn write_private(
    dir: &std::path::Path,
    path: &std::path::Path,
    bytes: &[u8],
) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(bytes)
}

/// Images being fetched, and the messages of their chats held behind them.
#[derive(Default)]
pub struct Fetches {
    /// Per chat with a fetch in flight: its events in arrival order, each
    /// `None` until its image is saved.
    held: HashMap<String, VecDeque<(u64, Option<ChatEvent>)>>,
    running: JoinSet<(String, u64, ChatEvent)>,
    next: u64,
}

impl Fetches {
    /// Whether another fetch may start now.
    pub fn has_room(&self) -> bool {
        self.running.len() < MAX_FETCHES
    }

    /// Starts `fetch` for chat `chat`: its event comes out, in its chat's
    /// order, once it is done.
    pub fn start(&mut self, chat: &str, fetch: impl Future<Output = ChatEvent> + Send + 'static) {
        let id = self.next;
        self.next += 1;
        self.held
            .entry(chat.to_owned())
            .or_default()
            .push_back((id, None));
        let chat = chat.to_owned();
        self.running.spawn(async move { (chat, id, fetch.await) });
    }

    /// `event` for `chat`: held when the chat waits for an image, else
    /// handed back to go at once.
    pub fn order(&mut self, chat: &str, event: ChatEvent) -> Option<ChatEvent> {
        match self.held.get_mut(chat) {
            Some(queue) if queue.len() < MAX_HELD_PER_CHAT => {
                queue.push_back((u64::MAX, Some(event)));
                None
            }
            _ => Some(event),
        }
    }

    /// Waits for the next fetch to finish; the events now free to go, in
    /// order. Pending for ever when nothing is being fetched.
    pub async fn next_done(&mut self) -> Vec<ChatEvent> {
        let Some(done) = self.running.join_next().await else {
            return std::future::pending().await;
        };
        // A fetch that panicked leaves its slot empty for good: every held
        // event goes on rather than its chat being held for ever.
        let (chat, id, event) = match done {
            Ok(done) => done,
            Err(_) => return self.release_all(),
        };
        let Some(queue) = self.held.get_mut(&chat) else {
            return vec![event];
        };
        if let Some(slot) = queue.iter_mut().find(|(at, _)| *at == id) {
            slot.1 = Some(event);
        }
        let mut ready = Vec::new();
        while let Some((_, Some(_))) = queue.front() {
            if let Some((_, Some(event))) = queue.pop_front() {
                ready.push(event);
            }
        }
        if queue.is_empty() {
            self.held.remove(&chat);
        }
        ready
    }

    /// Every held event that is ready, chats emptied (after a failed fetch).
    fn release_all(&mut self) -> Vec<ChatEvent> {
        let held = std::mem::take(&mut self.held);
        held.into_values()
            .flat_map(|q| q.into_iter().filter_map(|(_, e)| e))
            .collect()
    }
}
