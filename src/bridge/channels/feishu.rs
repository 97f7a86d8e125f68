//! The Feishu channel: intake events (long connection or webhook) become
//! [`ChatEvent`]s, and outbox entries go out through [`Api`]. Dedupe of
//! redelivered events is persisted in the daemon's state.

use std::path::Path;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Duration;
use tokio_util::task::AbortOnDropHandle;

use crate::bridge::access::pairing::Pairing;
use crate::bridge::access::policy::{ChatKind, Policy, RateWindow};
use crate::bridge::channels::chat::{CardClick, ChatEvent, ChatMessage, ClickAnswer, ToastLevel};
use crate::bridge::channels::chat_images::{Fetches, ImageAdmission, ImageNotSaved, Images};
use crate::bridge::channels::outbox::{Courier, Failure};
use crate::bridge::config::{Config, IntakeMode};
use crate::bridge::screen_picture::{PICTURE_REFUSED_CODES, without_picture};
use crate::feishu::api::{Api, ErrorClass, FeishuError, MAX_IMAGE_BYTES, ReceiveId};
use crate::feishu::card::{Card, with_fallback};
use crate::feishu::pace::Pacer;
use crate::feishu::{
    CardResponse, Dedupe, Domain, FeishuConfig, Intake, IntakeEvent, Toast, ToastKind,
};
use crate::i18n::Lang;
use crate::message::Message;
use crate::store::state::{ChatId, ChatTarget, OutboxEntry, OutboxOp};
use crate::store::{LogEvent, SharedState};

#[derive(Debug, thiserror::Error)]
pub enum ChannelError {
    #[error("Feishu configuration: {0}")]
    Config(String),
    #[error("cannot listen for Feishu webhooks on {addr}: {source}")]
    Bind {
        addr: String,
        #[source]
        source: std::io::Error,
    },
}

/// The daemon's persisted dedupe set, as the intake's [`Dedupe`].
struct StateDedupe(SharedState);

impl Dedupe for StateDedupe {
    fn first_seen(&self, key: &str) -> bool {
        self.0.update(|s| s.dedupe.first_seen(key))
    }
}

/// Builds the Feishu config from the daemon's.
pub fn feishu_config(config: &Config) -> Result<FeishuConfig, ChannelError> {
    let f = &config.feishu;
    let (Some(id), Some(secret)) = (&f.app_id, &f.app_secret) else {
        return Err(ChannelError::Config(
            "FEISHU_APP_ID and FEISHU_APP_SECRET must both be set".into(),
        ));
    };
    let domain = Domain::parse(&f.domain).map_err(|e| ChannelError::Config(e.to_string()))?;
    let mut fc = FeishuConfig::new(id.clone(), secret.clone(), domain);
    fc.encrypt_key = f.encrypt_key.clone();
    fc.verification_token = f.verification_token.clone();
    Ok(fc)
}

/// Starts the intake (events go to `chat`) and returns the courier, and
/// the intake's task: it ends, and the connection with it, when `chat`
/// closes (with `None`), or when the intake stopped by itself and no more
/// events can arrive (with why: a final refusal of the long connection);
/// aborting it stops the intake at once.
pub async fn start(
    config: &Config,
    shared: &SharedState,
    state_dir: &Path,
    chat: mpsc::Sender<ChatEvent>,
    rates: RateWindow,
) -> Result<(FeishuCourier, JoinHandle<Option<String>>), ChannelError> {
    let fc = feishu_config(config)?;
    let dedupe: Arc<dyn Dedupe> = Arc::new(StateDedupe(shared.clone()));
    let intake = match config.feishu.mode {
        IntakeMode::Websocket => Intake::long_connection(fc.clone(), dedupe),
        IntakeMode::Webhook => {
            let secret = |s: &Option<String>| s.as_ref().is_some_and(|s| !s.trim().is_empty());
            if !secret(&fc.encrypt_key) || !secret(&fc.verification_token) {
                let why = crate::feishu::webhook::WebhookError::Unverifiable;
                return Err(ChannelError::Config(why.to_string()));
            }
            let addr = &config.feishu.webhook_bind;
            let bind = addr
                .parse()
                .map_err(|e| ChannelError::Config(format!("feishu.webhook_bind `{addr}`: {e}")))?;
            Intake::webhook(fc.clone(), bind, dedupe)
                .await
                .map_err(|source| ChannelError::Bind {
                    addr: addr.clone(),
                    source,
                })?
        }
    };
    let api = Arc::new(Api::new(fc));
    let (bot_tx, bot_rx) = watch::channel(None);
    let fetch = AbortOnDropHandle::new(tokio::spawn(fetch_bot_id(Arc::clone(&api), bot_tx)));
    let images = Images {
        api: Arc::clone(&api),
        shared: shared.clone(),
        policy: Policy::with_rates(config.policy.clone(), rates),
        pairing: Pairing::new(state_dir),
        remote_hosts: (config.hosts.iter())
            .filter(|(_, h)| h.remote_shell())
            .map(|(name, _)| name.clone())
            .collect(),
    };
    let pump = tokio::spawn(pump(intake, chat, bot_rx, fetch, images));
    let courier = FeishuCourier::new(api).with_locale(config.chat.locale);
    Ok((courier, pump))
}

/// Wait between asks for the bot's open_id while Feishu does not answer.
const BOT_INFO_RETRY: Duration = Duration::from_secs(30);
/// Longest a group message that mentions someone waits for the bot's
/// open_id at startup (it decides whether the bot was addressed).
const BOT_INFO_WAIT: Duration = Duration::from_secs(5);

/// Asks for the bot's open_id until Feishu answers (the API client caches it).
async fn fetch_bot_id(api: Arc<Api>, tx: watch::Sender<Option<String>>) {
    loop {
        match api.bot_open_id().await {
            Ok(id) => {
                tracing::info!(open_id = %id, "the bot's open_id");
                let _ = tx.send(Some(id));
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot get the bot's open_id (bot info); mentions typed `bot` count until then");
                tokio::time::sleep(BOT_INFO_RETRY).await;
            }
        }
    }
}

/// Whether a message addresses the bot: a mention of the bot's own
/// open_id (not of a colleague). At startup it waits a moment for the id.
async fn mentions_bot(
    m: &crate::feishu::Message,
    bot: &mut watch::Receiver<Option<String>>,
) -> bool {
    if m.mentions.is_empty() {
        return false;
    }
    if bot.borrow().is_none() {
        let _ = tokio::time::timeout(BOT_INFO_WAIT, bot.wait_for(Option::is_some)).await;
    }
    let id = bot.borrow().clone();
    m.mentions(id.as_deref())
}

pub(super) fn chat_kind(m: &crate::feishu::Message) -> ChatKind {
    if m.chat_type == "p2p" {
        ChatKind::Direct
    } else {
        ChatKind::Group
    }
}

async fn pump(
    mut intake: Intake,
    chat: mpsc::Sender<ChatEvent>,
    mut bot: watch::Receiver<Option<String>>,
    _fetch: AbortOnDropHandle<()>,
    images: Images,
) -> Option<String> {
    let images = Arc::new(images);
    let mut fetches = Fetches::default();
    loop {
        // With the daemon gone, the intake goes too: a connection left
        // open would take (and acknowledge) events nobody handles.
        let event = tokio::select! {
            event = intake.recv() => event,
            ready = fetches.next_done() => {
                for event in ready {
                    if chat.send(event).await.is_err() {
                        return None;
                    }
                }
                continue;
            }
            () = chat.closed() => return None,
        };
        let Some(event) = event else {
            return Some(
                intake
                    .ended()
                    .unwrap_or_else(|| "the Feishu intake stopped".into()),
            );
        };
        let event = match event {
            IntakeEvent::MessageReceived(m) => {
                let Some(chat_id) = chat_id_of(&m.chat_id) else {
                    continue;
                };
                let mentions_bot = mentions_bot(&m, &mut bot).await;
                let admitted = (m.image_key.as_ref()).map(|_| images.admit(&m, mentions_bot));
                let text = match (&m.image_key, admitted) {
                    // Not for the bot, from someone it does not serve, or
                    // over the rate limit: not fetched into a workspace
                    // (admission refuses the message as it would any).
                    (Some(_), Some(ImageAdmission::NotServed | ImageAdmission::Limited)) => {
                        Err(ImageNotSaved::NotServed)
                    }
                    (Some(_), _) if !fetches.has_room() => Err(ImageNotSaved::Busy),
                    (Some(key), _) => {
                        // Fetched off this loop; the chat's next messages
                        // wait behind it.
                        let (images, key, order) = (images.clone(), key.clone(), chat_id.clone());
                        fetches.start(&order, async move {
                            let text = images.save(&m, &chat_id, &key).await;
                            message_event(m, chat_id, text, mentions_bot, true)
                        });
                        continue;
                    }
                    (None, _) => Ok(m.text.clone()),
                };
                // Counted here: a fetch refused for want of room.
                let counted = admitted == Some(ImageAdmission::Fetch);
                let order = chat_id.clone();
                let event = message_event(m, chat_id, text, mentions_bot, counted);
                match fetches.order(&order, event) {
                    Some(event) => event,
                    None => continue,
                }
            }
            IntakeEvent::ClockSkew {
                skew_secs,
                window_secs,
            } => {
                // Nothing for the daemon to do but say so where operators
                // look: every event is refused until the clock is fixed.
                images.shared.log.event(&LogEvent::ClockSkew {
                    skew_secs,
                    window_secs,
                });
                continue;
            }
            IntakeEvent::CardAction(a) => {
                let Some(chat_id) = chat_id_of(&a.chat_id) else {
                    continue;
                };
                let (tx, rx) = oneshot::channel::<ClickAnswer>();
                let respond = a.respond;
                // Translate the daemon's answer into Feishu's, whenever it comes.
                tokio::spawn(async move {
                    if let Ok(answer) = rx.await {
                        let _ = respond.send(to_response(answer));
                    }
                });
                ChatEvent::Click(CardClick {
                    event_id: a.event_id,
                    operator: a.operator_open_id,
                    value: a.value,
                    option: a.option,
                    message_id: a.message_id,
                    target: ChatTarget::Chat { id: chat_id },
                    respond: Some(tx),
                })
            }
        };
        if chat.send(event).await.is_err() {
            return None;
        }
    }
}

/// The chat an event names, parsed where it comes in; an id that is not
/// one (a forged or broken event) drops the event, logged.
fn chat_id_of(raw: &str) -> Option<ChatId> {
    ChatId::parse(raw)
        .inspect_err(|e| tracing::warn!(error = %e, "a Feishu event for no chat: dropped"))
        .ok()
}

/// The daemon's event for message `m` in chat `chat_id`, whose text (or
/// image's path) is `text`, or an image not saved and why; `rate_counted`
/// when its rate-limit slot is taken already.
fn message_event(
    m: crate::feishu::Message,
    chat_id: ChatId,
    text: Result<String, ImageNotSaved>,
    mentions_bot: bool,
    rate_counted: bool,
) -> ChatEvent {
    let (text, image_not_saved) = match text {
        Ok(text) => (text, None),
        Err(why) => (String::new(), Some(why)),
    };
    let kind = chat_kind(&m);
    ChatEvent::Message(ChatMessage {
        event_id: m.event_id,
        message_id: m.message_id,
        target: ChatTarget::Chat { id: chat_id },
        kind,
        sender: m.sender_open_id,
        text,
        mentions_bot,
        parent_id: m.parent_id,
        rate_counted,
        image_not_saved,
    })
}

fn to_response(answer: ClickAnswer) -> CardResponse {
    let toast = answer.toast.map(|(level, text)| Toast {
        kind: match level {
            ToastLevel::Success => ToastKind::Success,
            ToastLevel::Info => ToastKind::Info,
            ToastLevel::Warning => ToastKind::Warning,
            ToastLevel::Error => ToastKind::Error,
        },
        text,
    });
    CardResponse { toast, card: None }
}

/// Sends outbox entries with the Feishu API, paced within Feishu's limits.
pub struct FeishuCourier {
    api: Arc<Api>,
    pacer: Pacer,
    /// The chat's language (`[chat] locale`): the fallback text of cards.
    locale: Lang,
}

impl FeishuCourier {
    pub fn new(api: Arc<Api>) -> Self {
        FeishuCourier {
            api,
            pacer: Pacer::new(),
            locale: Lang::default(),
        }
    }

    /// Cards' fallback text in `locale` (each reader's client still shows
    /// its own language).
    pub fn with_locale(mut self, locale: Lang) -> Self {
        self.locale = locale;
        self
    }

    /// The API client it sends with (the answer stream shares it: one
    /// token cache).
    pub fn api(&self) -> Arc<Api> {
        Arc::clone(&self.api)
    }
}

/// The pacing key of an entry: its chat, or for an update the message.
fn pace_key<'a>(entry: &'a OutboxEntry, message_id: Option<&'a str>) -> &'a str {
    match (&entry.op, message_id) {
        (
            OutboxOp::Send {
                target: ChatTarget::Chat { id },
                ..
            }
            | OutboxOp::File {
                target: ChatTarget::Chat { id },
                ..
            },
            _,
        ) => id.as_str(),
        (OutboxOp::React { message_id, .. }, _) => message_id,
        (_, Some(id)) => id,
        _ => entry.op.handle(),
    }
}

/// The API an entry is delivered with, for its per-API minute limit.
fn api_name(op: &OutboxOp) -> &'static str {
    match op {
        OutboxOp::Send {
            reply_to: Some(_), ..
        } => "reply",
        OutboxOp::Send { .. } | OutboxOp::File { .. } => "send",
        OutboxOp::Patch { .. } => "patch",
        OutboxOp::React { .. } => "reaction",
    }
}

/// Why Feishu did not take an outbox entry, as its answer (or its
/// absence) says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FeishuFailure {
    /// Worth retrying: network, 5xx, rate limits the client gave up on.
    #[error("{0}")]
    Transient(String),
    /// Feishu answered with a code no table classifies.
    #[error("Feishu error {code}: {msg}")]
    Refused { code: i64, msg: String },
    /// Never going to work: rejected card, deleted message, bot not in
    /// the chat, too large, …
    #[error("{msg}")]
    Permanent { code: Option<i64>, msg: String },
    /// The entry is for the console or a `clawmux run`, which Feishu has
    /// no chat for: not Feishu's to deliver (see [`Failure::NotThisChannel`]).
    #[error("{0}")]
    NotAChat(&'static str),
}

impl FeishuFailure {
    /// A permanent failure without a Feishu code.
    pub fn permanent(msg: impl Into<String>) -> Self {
        FeishuFailure::Permanent {
            code: None,
            msg: msg.into(),
        }
    }
}

impl Courier for FeishuCourier {
    type Error = FeishuFailure;

    /// Feishu's code table decides: a code that says the chat or user
    /// cannot be reached at all is [`Failure::ChatGone`] (a notice there
    /// would be refused too).
    fn classify(&self, error: &FeishuFailure) -> Failure {
        outbox_failure(error)
    }

    fn code(&self, error: &FeishuFailure) -> Option<i64> {
        match error {
            FeishuFailure::Transient(_) => None,
            FeishuFailure::Refused { code, .. } => Some(*code),
            FeishuFailure::Permanent { code, .. } => *code,
            FeishuFailure::NotAChat(_) => None,
        }
    }

    async fn deliver(
        &self,
        entry: &OutboxEntry,
        message_id: Option<&str>,
    ) -> Result<Option<String>, FeishuFailure> {
        self.pacer
            .wait(api_name(&entry.op), pace_key(entry, message_id))
            .await;
        let result = match (&entry.op, message_id) {
            (
                OutboxOp::Send {
                    target,
                    reply_to,
                    image,
                    ..
                },
                _,
            ) => {
                // Drawn (and its picture uploaded) only when it has
                // somewhere to go.
                let card = self.card_json(entry, image.as_deref());
                match (reply_to, target) {
                    (Some(parent), _) => self.api.reply(parent, &card.await?, &entry.uuid).await,
                    (None, ChatTarget::Chat { id }) => {
                        let to = ReceiveId::ChatId(id.to_string());
                        self.api.send(&to, &card.await?, &entry.uuid).await
                    }
                    (None, ChatTarget::User { id }) => {
                        let to = ReceiveId::OpenId(id.to_string());
                        self.api.send(&to, &card.await?, &entry.uuid).await
                    }
                    (None, ChatTarget::Console | ChatTarget::Run { .. }) => {
                        return Err(FeishuFailure::NotAChat("a console card has no Feishu chat"));
                    }
                }
                .map(Some)
            }
            (OutboxOp::Patch { .. }, Some(id)) => {
                let card = self.card_json(entry, None).await?;
                self.api.patch(id, &card).await.map(|()| None)
            }
            (OutboxOp::Patch { .. }, None) => {
                return Err(FeishuFailure::permanent("no message to patch"));
            }
            (
                OutboxOp::File {
                    target,
                    reply_to,
                    path,
                    file_name,
                    ..
                },
                _,
            ) => {
                let ChatTarget::Chat { id } = target else {
                    return Err(FeishuFailure::NotAChat("a console file has no Feishu chat"));
                };
                let bytes = read_outbox_file(path)?;
                let sent = async {
                    let key = self.api.upload_file("stream", file_name, &bytes).await?;
                    self.api
                        .send_file(
                            &ReceiveId::ChatId(id.to_string()),
                            reply_to.as_deref(),
                            &key,
                            &entry.uuid,
                        )
                        .await
                }
                .await;
                if sent.is_ok() {
                    // Delivered: the copy kept for retries is not needed.
                    let _ = std::fs::remove_file(path);
                }
                sent.map(Some)
            }
            (
                OutboxOp::React {
                    message_id, emoji, ..
                },
                _,
            ) => {
                // A reaction is feedback, not content: one Feishu refusal
                // (no reaction permission, message gone) sets it aside.
                return match self.api.add_reaction(message_id, emoji).await {
                    Ok(_) => Ok(None),
                    Err(e @ FeishuError::Api { .. }) => Err(FeishuFailure::Permanent {
                        code: e.code(),
                        msg: e.to_string(),
                    }),
                    Err(e) => Err(classify(e)),
                };
            }
        };
        if let (
            Ok(_),
            OutboxOp::Send {
                image: Some(path), ..
            },
        ) = (&result, &entry.op)
        {
            // Delivered: the picture kept for retries is not needed.
            let _ = std::fs::remove_file(path);
        }
        result.map_err(classify)
    }
}

impl FeishuCourier {
    /// A send's or update's message drawn as Feishu card JSON, its
    /// picture (when it has one, at `image`) uploaded first.
    async fn card_json(
        &self,
        entry: &OutboxEntry,
        image: Option<&str>,
    ) -> Result<serde_json::Value, FeishuFailure> {
        let Some(message) = &entry.message else {
            return Err(FeishuFailure::permanent("a card with nothing on it"));
        };
        let card = match image {
            Some(path) => self.picture_card(message, path).await?,
            None => Card::from(message),
        };
        match serde_json::to_value(&card) {
            Ok(card) => Ok(with_fallback(&card, self.locale)),
            Err(e) => Err(FeishuFailure::permanent(format!(
                "the card does not serialize: {e}"
            ))),
        }
    }

    /// `message`'s card with its picture (the PNG at `path`) uploaded and
    /// its key in place; without the picture when Feishu refuses it for
    /// good or the file is gone. A passing failure is retried.
    async fn picture_card(&self, message: &Message, path: &str) -> Result<Card, FeishuFailure> {
        let without = |why: &str| Card::from(&without_picture(message, why));
        let bytes = match read_bounded_file(path, MAX_IMAGE_BYTES) {
            Ok(b) => b,
            Err(e) => return Ok(without(&e)),
        };
        match self.api.upload_image(&bytes).await {
            Ok(key) => Ok(Card::render(message, Some(&key))),
            Err(e)
                if e.class() == ErrorClass::Permanent
                    || e.code().is_some_and(|c| PICTURE_REFUSED_CODES.contains(&c)) =>
            {
                tracing::warn!(error = %e, "Feishu refused a screen picture: sending the text");
                let why = match e.code() {
                    Some(code) => format!(
                        "Feishu refused the upload (error {code}: {})",
                        e.feishu_msg().unwrap_or("")
                    ),
                    None => e.to_string(),
                };
                Ok(without(&why))
            }
            Err(e) => Err(classify(e)),
        }
    }
}

/// The file at `path`, at most `max` bytes; why not, as a reader would
/// want it said.
fn read_bounded_file(path: &str, max: usize) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(max as u64 + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("the picture file is gone ({e})"))?;
    if bytes.len() > max {
        return Err(format!("the picture is over {max} bytes"));
    }
    Ok(bytes)
}

/// The file an outbox entry sends; gone or unreadable is permanent (a
/// retry cannot bring it back).
fn read_outbox_file(path: &str) -> Result<Vec<u8>, FeishuFailure> {
    std::fs::read(path).map_err(|e| FeishuFailure::permanent(format!("file {path}: {e}")))
}

/// What the outbox does about a failed call: move it aside (permanent),
/// count Feishu's refusals of it (an unclassified code Feishu answered
/// with), or retry (network, 5xx, rate limits the client gave up on).
pub fn classify(e: FeishuError) -> FeishuFailure {
    match (e.class(), &e) {
        (ErrorClass::Permanent, _) => FeishuFailure::Permanent {
            code: e.code(),
            msg: e.feishu_msg().map_or_else(|| e.to_string(), str::to_string),
        },
        // A documented passing state (230049, still being sent) is not a
        // refusal: it never counts toward moving the entry aside.
        (ErrorClass::Transient, FeishuError::Api { code, msg, .. })
            if !crate::feishu::api::is_busy(*code) =>
        {
            FeishuFailure::Refused {
                code: *code,
                msg: msg.clone(),
            }
        }
        _ => FeishuFailure::Transient(e.to_string()),
    }
}

/// The outbox's reading of a Feishu failure.
fn outbox_failure(error: &FeishuFailure) -> Failure {
    match error {
        FeishuFailure::Transient(_) => Failure::Retry,
        FeishuFailure::Refused { .. } => Failure::Refused,
        FeishuFailure::Permanent {
            code: Some(code), ..
        } if crate::feishu::api::chat_unreachable(*code) => Failure::ChatGone,
        FeishuFailure::Permanent { .. } => Failure::Drop,
        FeishuFailure::NotAChat(_) => Failure::NotThisChannel,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: i64) -> FeishuError {
        FeishuError::Api {
            code,
            msg: "m".into(),
            http_status: 400,
        }
    }

    /// The console's cards and files (news of a project no chat uses) are
    /// not Feishu's: refused before any request (the API here listens
    /// nowhere, so a request would be a transient failure instead).
    #[tokio::test]
    async fn a_console_entry_is_not_feishus_and_is_never_requested() {
        let config = FeishuConfig::new("a", "s", Domain::Custom("http://127.0.0.1:9".into()));
        let courier = FeishuCourier::new(Arc::new(Api::new(config)));
        let handle: crate::store::state::CardHandle = "h-1".parse().unwrap();
        let send = OutboxOp::Send {
            target: ChatTarget::Console,
            handle: handle.clone(),
            reply_to: None,
            image: None,
        };
        let file = OutboxOp::File {
            target: ChatTarget::Console,
            handle,
            reply_to: None,
            path: "/nowhere/out.txt".into(),
            file_name: "out.txt".into(),
        };
        for op in [send, file] {
            let entry = OutboxEntry {
                uuid: "u-1".into(),
                op,
                message: Some(crate::bridge::present::info_card(
                    crate::bridge::texts::Msg::ApprovalsOff,
                    crate::bridge::texts::Msg::ApprovalsOff.text(),
                )),
                created_ms: 0,
            };
            let error = courier.deliver(&entry, None).await.unwrap_err();
            assert!(matches!(error, FeishuFailure::NotAChat(_)), "{error:?}");
            assert_eq!(courier.classify(&error), Failure::NotThisChannel);
        }
    }

    #[test]
    fn a_message_still_being_sent_is_not_counted_as_a_refusal() {
        assert!(matches!(classify(api(230049)), FeishuFailure::Transient(_)));
        assert!(matches!(
            classify(api(239999)),
            FeishuFailure::Refused { .. }
        ));
        assert!(matches!(
            classify(api(230053)),
            FeishuFailure::Permanent {
                code: Some(230053),
                ..
            }
        ));
    }

    #[test]
    fn the_channel_tells_a_chat_it_cannot_reach_from_a_card_it_refuses() {
        // Each documented "cannot reach this chat or user" code (bot not in
        // it, user blocked the bot, chat dissolved, …).
        for code in [230002, 230006, 230053, 232009] {
            assert_eq!(
                outbox_failure(&classify(api(code))),
                Failure::ChatGone,
                "{code}"
            );
        }
        // Too long, rejected card: the chat is there to be told.
        for code in [230025, 230099] {
            assert_eq!(
                outbox_failure(&classify(api(code))),
                Failure::Drop,
                "{code}"
            );
        }
        assert_eq!(outbox_failure(&classify(api(239999))), Failure::Refused);
        assert_eq!(outbox_failure(&classify(api(230049))), Failure::Retry);
        let no_code = FeishuFailure::permanent("no message to patch");
        assert_eq!(outbox_failure(&no_code), Failure::Drop);
        let console = FeishuFailure::NotAChat("a console card has no Feishu chat");
        assert_eq!(outbox_failure(&console), Failure::NotThisChannel);
    }
}
