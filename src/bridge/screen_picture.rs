//! Pictures of a pane in cards (`/gsd:screen` on Feishu): the pane's cells
//! drawn as a PNG ([`crate::render`]) off the core's thread, written
//! privately under the state directory, and queued as a message with a
//! picture block whose outbox entry names the file (`OutboxOp::Send {
//! image }`). The Feishu courier uploads the file (`im/v1/images`) right
//! before sending and draws the card with the key Feishu gave; if Feishu
//! refuses the picture for good (no permission, too large), the card goes
//! without it, the screen's text in its place ([`without_picture`]), so
//! the screen is never lost for a picture. With no font on the machine the
//! card is the text one, saying why.

use crate::bridge::texts::Msg;
use std::path::PathBuf;

use crate::bridge::outbox_files::write_outbox_file;
use crate::bridge::present;
use crate::message::{Block, Message};
use crate::render::{self, FontPaths, Grid};
use crate::store::SharedState;
use crate::store::clock;
use crate::store::state::{CardHandle, ChatTarget, OutboxEntry, OutboxOp, ProjectName};

/// Feishu's answers to an image upload that no retry changes: bad
/// request, too large, no bot, empty, unknown format, resolution
/// (`im/v1/images`' own table), and a missing scope (99991672: the app
/// lacks `im:resource`). The card then goes without its picture.
pub const PICTURE_REFUSED_CODES: [i64; 7] =
    [234001, 234006, 234007, 234010, 234011, 234039, 99991672];

/// A screen to draw and send.
pub struct ScreenPicture {
    pub shared: SharedState,
    pub fonts: FontPaths,
    pub target: ChatTarget,
    pub reply_to: Option<String>,
    pub project: ProjectName,
    /// The screen as text, for the panel under the picture.
    pub text: String,
    pub grid: Grid,
}

impl std::fmt::Debug for ScreenPicture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (f.debug_struct("ScreenPicture"))
            .field("project", &self.project)
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl ScreenPicture {
    /// Draws the picture on a blocking thread (inline outside a runtime),
    /// writes it under `state_dir` and queues its card.
    pub fn queue(self, state_dir: PathBuf) {
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn_blocking(move || self.run(&state_dir));
            }
            Err(_) => self.run(&state_dir),
        }
    }

    fn run(self, state_dir: &std::path::Path) {
        let uuid = uuid::Uuid::new_v4().to_string();
        let drawn = render::fonts::shared(&self.fonts)
            .map_err(render::RenderError::from)
            .and_then(|fonts| render::render(&self.grid, &fonts))
            .map_err(|e| e.to_string())
            .and_then(|pic| {
                write_outbox_file(state_dir, &format!("{uuid}.png"), &pic.png)
                    .map_err(|e| e.to_string())
            });
        let (card, image) = match drawn {
            Ok(path) => (
                present::screen_picture_card(self.project.as_str(), &self.text),
                Some(path.display().to_string()),
            ),
            Err(why) => {
                tracing::warn!(project = %self.project, error = %why, "no screen picture");
                (text_card(self.project.as_str(), &self.text, &why), None)
            }
        };
        let entry = OutboxEntry {
            uuid,
            op: OutboxOp::Send {
                target: self.target,
                handle: CardHandle::random(),
                reply_to: self.reply_to,
                image,
            },
            message: Some(card),
            created_ms: clock::now_ms(),
        };
        self.shared.update(|s| s.queue(entry));
    }
}

/// The screen as text, saying why it has no picture (no font, …).
fn text_card(project: &str, text: &str, why: &str) -> Message {
    present::screen_card(project, text).push(Block::note(Msg::NoPicture.with(&[("why", why)])))
}

/// `message` without its picture: a note saying `why` in its place, and
/// the folded panels' blocks unfolded (the screen's text is all there is).
pub fn without_picture(message: &Message, why: &str) -> Message {
    let note = Block::note(Msg::NoPicture.with(&[("why", why)]));
    let mut out = Message {
        blocks: Vec::new(),
        ..message.clone()
    };
    for block in &message.blocks {
        match block {
            Block::Picture { .. } => out.blocks.push(note.clone()),
            Block::Folded { blocks, .. } => out.blocks.extend(blocks.iter().cloned()),
            other => out.blocks.push(other.clone()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_the_picture_the_text_is_shown() {
        let card = present::screen_picture_card("web", "$ ls\nfile");
        assert!(matches!(card.blocks[0], Block::Picture { .. }));
        let text = without_picture(&card, "no permission").to_text();
        assert!(text.contains("No picture: no permission"), "{text}");
        assert!(text.contains("$ ls\nfile"), "{text}");
        assert!(!card.to_text().contains("$ ls"), "folded before");
    }

    #[test]
    fn without_fonts_the_card_is_the_text_saying_why() {
        let why = render::RenderError::from(render::FontError::NoMonospace).to_string();
        let card = text_card("web", "$ ls", &why);
        let text = card.to_text();
        assert!(text.contains("$ ls"), "{text}");
        assert!(
            text.contains("No picture: no monospace font found"),
            "{text}"
        );
        assert!(text.contains("install fonts-dejavu-core"), "{text}");
        assert!(
            !card
                .blocks
                .iter()
                .any(|b| matches!(b, Block::Picture { .. }))
        );
    }

    #[test]
    fn a_picture_is_drawn_written_privately_and_queued() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let state = tempfile::tempdir().unwrap();
        let (shared, _) = SharedState::open(state.path()).unwrap();
        let mut p = vt100::Parser::new(
            std::num::NonZeroU16::new(4).unwrap(),
            std::num::NonZeroU16::new(20).unwrap(),
            0,
        );
        p.process(b"$ ls\r\nfile");
        let job = ScreenPicture {
            shared: shared.clone(),
            fonts: FontPaths::default(),
            target: ChatTarget::Chat {
                id: crate::store::ids::chat("oc_1"),
            },
            reply_to: Some("om_1".into()),
            project: crate::store::ids::project("web"),
            text: "$ ls\nfile".into(),
            grid: Grid::from_screen(p.screen()),
        };
        job.run(dir.path());
        let entry = shared.read(|s| s.outbox.front().cloned()).unwrap();
        let OutboxOp::Send {
            image: Some(path),
            reply_to,
            ..
        } = &entry.op
        else {
            panic!("{:?}", entry.op)
        };
        assert_eq!(reply_to.as_deref(), Some("om_1"));
        let png = std::fs::read(path).unwrap();
        assert!(png.starts_with(b"\x89PNG"));
        let mode = std::fs::metadata(path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let message = entry.message.unwrap();
        assert!(matches!(message.blocks[0], Block::Picture { .. }));
        let Block::Folded { blocks, .. } = &message.blocks[1] else {
            panic!("{message:?}")
        };
        assert!(
            matches!(&blocks[0], Block::Text(t) if t.get(crate::i18n::Lang::En).contains("$ ls\nfile"))
        );
    }
}
