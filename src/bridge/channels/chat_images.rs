//! Images users send from Feishu: fetched only for senders the bot
//! serves and within their rate limit, saved privately under the project's
//! workspace on this machine (never through a symlink), and fetched off
//! the intake loop ([`Fetches`]), so one slow download holds up neither
//! another chat's messages nor any click, while each chat's messages still
//! reach the daemon in the order they were sent.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use tokio::task::JoinSet;

use crate::bridge::access::pairing::Pairing;
use crate::bridge::access::policy::{Decision, Policy};
use crate::bridge::channels::chat::ChatEvent;
use crate::bridge::present::words::ChatWords;
use crate::bridge::texts::Msg;
use crate::feishu::api::Api;
use crate::i18n::Text;
use crate::store::SharedState;
use crate::store::state::{ChatId, ProjectName};

/// Images fetched at once at most; one more is refused with a reason.
pub const MAX_FETCHES: usize = 8;

/// Messages of one chat held behind its images at most; more go on at
/// once (out of order rather than held without bound).
pub const MAX_HELD_PER_CHAT: usize = 64;

/// Why an image from chat was not saved (the chat is told in its words:
/// `present::words`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageNotSaved {
    #[error("the bot does not take it")]
    NotServed,
    #[error("{MAX_FETCHES} are being fetched already: send it again later")]
    Busy,
    #[error("this chat has no project to save it in")]
    NoProject,
    #[error("{0} is a pane adopted from a terminal, with no workspace of clawmux's to save it in")]
    Adopted(ProjectName),
    #[error("{project} runs on {host}, and images are saved only for projects on this machine")]
    Remote { project: ProjectName, host: String },
    #[error("could not download it: {0}")]
    Download(String),
    #[error("could not write it: {0}")]
    Write(String),
}

/// The chat's words for each reason, from the catalogue. (Here, not in
/// `present::words` with the others: the presenter sits below the
/// channels.)
impl ChatWords for ImageNotSaved {
    fn chat_words(&self) -> Text {
        match self {
            ImageNotSaved::NotServed => Msg::ImageNotServed.text(),
            ImageNotSaved::Busy => Msg::ImageBusy.with(&[("n", &MAX_FETCHES.to_string())]),
            ImageNotSaved::NoProject => Msg::ImageNoProject.text(),
            ImageNotSaved::Adopted(project) => {
                Msg::ImageAdopted.with(&[("project", project.as_str())])
            }
            ImageNotSaved::Remote { project, host } => {
                Msg::ImageRemote.with(&[("project", project.as_str()), ("host", host)])
            }
            ImageNotSaved::Download(e) => Msg::ImageDownload.with(&[("error", e)]),
            ImageNotSaved::Write(e) => Msg::ImageWrite.with(&[("error", e)]),
        }
    }
}

/// Saves images users send into their project's workspace, so the agent
/// can be pointed at them.
pub struct Images {
    pub api: Arc<Api>,
    pub shared: SharedState,
    /// An image is downloaded only from a sender, and in a chat, the bot
    /// serves (as admission will judge the message), so nobody else can
    /// put files in a workspace; its message takes its rate-limit slot
    /// here, in the window admission shares.
    pub policy: Policy,
    pub pairing: Pairing,
    /// The `[hosts]` reached through ssh: their projects' workspaces are
    /// not on this machine, where the image would be saved.
    pub remote_hosts: Vec<String>,
}

/// Whether an image message's image is fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageAdmission {
    /// Fetched; the message's rate-limit slot is taken.
    Fetch,
    /// Not for the bot, or from someone it does not serve.
    NotServed,
    /// Over the sender's rate limit: admission drops the message.
    Limited,
}

/// Where images from chat go, under the project workspace.
const IMAGES_DIR: &str = ".clawmux/images";

impl Images {
    /// Whether the access policy, and the sender's rate limit, let this
    /// message in: its image is fetched only then.
    pub fn admit(&self, m: &crate::feishu::Message, mentions_bot: bool) -> ImageAdmission {
        let paired = self.pairing.allowed().unwrap_or_default();
        let kind = super::feishu::chat_kind(m);
        let (sender, chat) = (&m.sender_open_id, &m.chat_id);
        let now = std::time::Instant::now();
        match (self.policy).check(sender, kind, chat, mentions_bot, &paired, now) {
            Decision::Allow => ImageAdmission::Fetch,
            Decision::Limited => ImageAdmission::Limited,
            _ => ImageAdmission::NotServed,
        }
    }

    /// Where an image for the chat's project goes, or why nowhere.
    fn folder(&self, chat: &ChatId) -> Result<std::path::PathBuf, ImageNotSaved> {
        let project = self.shared.read(|s| {
            let name = s.chats.get(chat)?;
            Some((name.clone(), s.projects.get(name)?.clone()))
        });
        let Some((name, record)) = project else {
            return Err(ImageNotSaved::NoProject);
        };
        if record.adopted.is_some() {
            return Err(ImageNotSaved::Adopted(name));
        }
        if let Some(host) = record.host.filter(|h| self.remote_hosts.contains(h)) {
            return Err(ImageNotSaved::Remote {
                project: name,
                host,
            });
        }
        Ok(std::path::Path::new(&record.workspace).join(IMAGES_DIR))
    }

    /// The text typed for an image message (where it was saved), or why
    /// it was not saved, for the chat (nothing is typed then).
    pub async fn save(
        &self,
        m: &crate::feishu::Message,
        chat: &ChatId,
        image_key: &str,
    ) -> Result<String, ImageNotSaved> {
        let dir = self.folder(chat)?;
        let bytes = match self.api.download_image(&m.message_id, image_key).await {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(error = %e, message_id = %m.message_id, "cannot download an image from chat");
                return Err(ImageNotSaved::Download(e.to_string()));
            }
        };
        let name: String = m
            .message_id
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
            .collect();
        let path = dir.join(format!("{name}.{}", image_ext(&bytes)));
        match write_private(&dir, &path, &bytes) {
            Ok(()) => Ok(format!("Image from chat saved at {}", path.display())),
            Err(e) => {
                tracing::warn!(error = %e, path = %path.display(), "cannot save an image from chat");
                Err(ImageNotSaved::Write(e.to_string()))
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

/// A 0700 directory and a 0600 file (what users send is private), never
/// through a symlink: a workspace is the agent's to write, and a link
/// planted at `.clawmux`, `images` or the file's name would send the image
/// (truncating what is there) anywhere the daemon's user may write.
fn write_private(
    dir: &std::path::Path,
    path: &std::path::Path,
    bytes: &[u8],
) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    // The folders under the workspace (`.clawmux`, `images`): real
    // folders, or made here, one at a time, never through a link.
    for folder in [dir.parent(), Some(dir)].into_iter().flatten() {
        match std::fs::symlink_metadata(folder) {
            Ok(m) if m.file_type().is_symlink() => {
                let why = format!("{} is a symbolic link", folder.display());
                return Err(std::io::Error::other(why));
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::DirBuilder::new().mode(0o700).create(folder)?;
            }
            Err(e) => return Err(e),
        }
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    f.write_all(bytes)
}

/// Images being fetched, and the messages of their chats held behind them.
#[derive(Default)]
pub struct Fetches {
    /// Per chat with a fetch in flight: its events in arrival order, each
    /// `None` until its image is saved.
    held: HashMap<ChatId, VecDeque<(u64, Option<ChatEvent>)>>,
    running: JoinSet<(ChatId, u64, ChatEvent)>,
    next: u64,
}

impl Fetches {
    /// Whether another fetch may start now.
    pub fn has_room(&self) -> bool {
        self.running.len() < MAX_FETCHES
    }

    /// Starts `fetch` for chat `chat`: its event comes out, in its chat's
    /// order, once it is done.
    pub fn start(
        &mut self,
        chat: &ChatId,
        fetch: impl Future<Output = ChatEvent> + Send + 'static,
    ) {
        let id = self.next;
        self.next += 1;
        self.held
            .entry(chat.clone())
            .or_default()
            .push_back((id, None));
        let chat = chat.clone();
        self.running.spawn(async move { (chat, id, fetch.await) });
    }

    /// `event` for `chat`: held when the chat waits for an image, else
    /// handed back to go at once.
    pub fn order(&mut self, chat: &ChatId, event: ChatEvent) -> Option<ChatEvent> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::i18n::Lang;

    fn has_cjk(s: &str) -> bool {
        s.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
    }

    #[test]
    fn every_image_not_saved_has_chat_words_in_both_languages() {
        let all = [
            ImageNotSaved::NotServed,
            ImageNotSaved::Busy,
            ImageNotSaved::NoProject,
            ImageNotSaved::Adopted(crate::store::ids::project("demo")),
            ImageNotSaved::Remote {
                project: crate::store::ids::project("demo"),
                host: "far".into(),
            },
            ImageNotSaved::Download("HTTP 403".into()),
            ImageNotSaved::Write("disk full".into()),
        ];
        for e in &all {
            let t = e.chat_words();
            assert!(has_cjk(t.get(Lang::Zh)), "{e:?}: {t:?}");
            assert_eq!(t.get(Lang::En), e.to_string(), "{e:?}");
        }
        let t = ImageNotSaved::Remote {
            project: crate::store::ids::project("demo"),
            host: "far".into(),
        };
        assert!(t.chat_words().get(Lang::Zh).contains("far"));
    }

    use crate::bridge::config::PolicyConfig;
    use crate::store::ids::{chat, project};
    use crate::store::state::ProjectRecord;

    /// Images for a chat whose project `demo` is `record`.
    fn images_for(record: ProjectRecord, dir: &std::path::Path) -> Images {
        let (shared, _) = SharedState::open(dir).unwrap();
        shared.update(|s| {
            s.chats.insert(chat("oc_1"), project("demo"));
            s.projects.insert(project("demo"), record);
        });
        let config = crate::feishu::FeishuConfig::new("a", "s", crate::feishu::Domain::Feishu);
        Images {
            api: Arc::new(Api::new(config)),
            shared,
            policy: Policy::new(PolicyConfig::default()),
            pairing: Pairing::new(dir),
            remote_hosts: vec!["far".into()],
        }
    }

    /// An adopted pane has no workspace of clawmux's, and a project on an
    /// ssh host has its workspace there: neither gets a folder here.
    #[test]
    fn images_go_only_to_workspaces_on_this_machine() {
        let dir = tempfile::tempdir().unwrap();
        let local = ProjectRecord {
            workspace: "/srv/ws/demo".into(),
            ..ProjectRecord::default()
        };
        let folder = images_for(local.clone(), dir.path()).folder(&chat("oc_1"));
        assert_eq!(folder, Ok("/srv/ws/demo/.clawmux/images".into()));
        let adopted = ProjectRecord {
            adopted: serde_json::from_str("\"work:%0\"").ok(),
            ..local.clone()
        };
        let why = images_for(adopted, dir.path())
            .folder(&chat("oc_1"))
            .unwrap_err();
        assert_eq!(
            why,
            ImageNotSaved::Adopted(crate::store::ids::project("demo"))
        );
        let remote = ProjectRecord {
            host: Some("far".into()),
            ..local.clone()
        };
        let why = images_for(remote, dir.path())
            .folder(&chat("oc_1"))
            .unwrap_err();
        let far = ImageNotSaved::Remote {
            project: crate::store::ids::project("demo"),
            host: "far".into(),
        };
        assert_eq!(why, far);
        // A `[hosts]` entry that is a local tmux server is this machine.
        let near = ProjectRecord {
            host: Some("near".into()),
            ..local
        };
        assert!(images_for(near, dir.path()).folder(&chat("oc_1")).is_ok());
        let none = images_for(ProjectRecord::default(), dir.path()).folder(&chat("oc_2"));
        assert_eq!(none, Err(ImageNotSaved::NoProject));
    }
}
