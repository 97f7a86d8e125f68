//! What goes into a project actor ([`ProjectCmd`]) and what comes out of it
//! ([`ProjectEvent`]): the actor's whole interface with the bridge core.

use std::sync::Arc;
use std::time::Duration;

use crate::store::state::{Approval, ApprovalId, ChatTarget, Job, ProjectName};

use super::runner::{AgentFailure, MAX_QUEUED, TaskNews};
use crate::agents::claude::PermissionMode;
use crate::bridge::outbox_files::KeptOutput;
use crate::bridge::panes::agent_pane::PaneError;
use crate::detect::ProfileError;
use crate::hooks::ToolRequest;
use crate::hooks::usage::TurnUsage;
use crate::tmux::TmuxError;

/// Why a project could not do what it was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProjectError {
    #[error("the project stopped")]
    Stopped,
    #[error("the project is not keeping up with its commands; try again in a moment")]
    Overloaded,
    #[error("{MAX_QUEUED} commands are already waiting; try again later")]
    QueueFull,
    #[error("the agent pane is not attached")]
    NotAttached,
    #[error("another prompt is on screen now; answer that one")]
    OtherPrompt,
    #[error("nothing is running")]
    NothingToCancel,
    #[error("an answer is still being typed into this prompt")]
    Answering,
    #[error(
        "{mode} mode is not among the modes shift+tab cycles through in this session (it shows {shown}); set `permission_mode = \"{mode}\"` for the project and restart its agent"
    )]
    ModeNotReached { mode: PermissionMode, shown: String },
    #[error("the agent is busy or asking: switch its mode once it waits for input")]
    NotIdle,
    /// The dialog stayed on screen, unchanged, after the key was sent
    /// `tries` times.
    #[error(
        "the agent did not take the answer: its dialog is still on screen, unchanged, after the key was sent {tries} times"
    )]
    NotTaken { tries: u8 },
    /// tmux could not be reached or refused a command.
    #[error(transparent)]
    Pane(#[from] PaneError),
    /// The pane runs another program than the one attached (or moved):
    /// nothing was typed, and nothing is retried into it.
    #[error(transparent)]
    Replaced(TmuxError),
    #[error("the session was lost again ({reason}); not retrying")]
    LostAgain { reason: String },
    #[error("the command was running when clawmux restarted, and {0}")]
    NotResumed(Box<ProjectError>),
    #[error(transparent)]
    Profile(ProfileFault),
    #[error(transparent)]
    Name(#[from] crate::store::ids::NameError),
    #[error("no approval is waiting in this project (workspace {0})")]
    NoApprovalWaiting(String),
    #[error("`{key}` is not one of the options ({keys})")]
    NotAnOption { key: String, keys: String },
}

/// A project's detection profile that could not be made, shared by the
/// errors that carry it ([`ProfileError`] holds an I/O error: neither
/// `Clone` nor `Eq`). Two are equal when they say the same.
#[derive(Debug, Clone, thiserror::Error)]
#[error(transparent)]
pub struct ProfileFault(#[from] Arc<ProfileError>);

impl From<ProfileError> for ProfileFault {
    fn from(e: ProfileError) -> Self {
        ProfileFault(Arc::new(e))
    }
}

impl PartialEq for ProfileFault {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_string() == other.0.to_string()
    }
}

impl Eq for ProfileFault {}

#[derive(Debug, Clone, PartialEq)]
pub enum ProjectEventKind {
    /// Waiting behind `position` other commands (1 = next).
    Queued {
        position: usize,
    },
    /// Typed into the pane (or found there after a restart).
    Started,
    Progress {
        summary: String,
        percent: Option<u8>,
        tail: String,
    },
    /// The project's GSD planning files say something new (`summary`, see
    /// [`crate::gsd::planning::Planning::summary`]), read on its host
    /// while a command runs (see [`super::planning_watch`]).
    Planning {
        summary: String,
    },
    /// The running command's answer so far (the same filtered text its
    /// result will hold, its end kept within the stream bound), sent when
    /// the pane finished new lines of it: what a streamed card shows.
    Answer {
        text: String,
    },
    Approval(Approval),
    ApprovalGone {
        approval_id: ApprovalId,
    },
    /// What the actor found when it first looked, at start: the dialog on
    /// screen by question and body (`None`: none, or no session left).
    /// Approvals pending from before that are not it were answered (or
    /// went) while clawmux was down.
    ScreenAtStart {
        dialog: Option<(String, String)>,
    },
    /// The dialog read off the screen disagrees with what the agent's
    /// permission hook says it asks (`detail`, for the chat).
    DialogMismatch {
        approval_id: ApprovalId,
        detail: String,
    },
    Error {
        line: String,
        context: String,
    },
    /// The running command's agent works and its screen showed nothing new
    /// but its busy row for `secs` seconds (see
    /// [`crate::detect::DetectionKind::Stalled`]): a status, not an error.
    Stalled {
        secs: u64,
    },
    /// After [`ProjectEventKind::Stalled`], the screen changed again (or the
    /// work ended), `secs` seconds after its last change.
    Resumed {
        secs: u64,
    },
    Completed {
        /// The agent's answer (see [`crate::bridge::panes::transcript::Transcript::text`]).
        output: String,
        /// The pane's screen when the turn ended (empty without a pane).
        screen: String,
        seconds: u64,
        errors: usize,
        ending: TurnEnding,
        /// The turn's figures, where its `Stop` hook named a transcript
        /// that has them (the result's footer); none otherwise.
        usage: TurnUsage,
        /// A long result's output kept as a file, by the daemon before the
        /// core sees this (the actor leaves it `None`; see
        /// [`crate::bridge::outbox_files::keep_long_output`]).
        kept: Option<KeptOutput>,
    },
    TimedOut {
        screen: String,
        seconds: u64,
        /// Nothing on the screen was recognised during the command (no
        /// busy marker, prompt, progress or idle box): the agent's screen
        /// may have changed beyond what detection knows.
        unrecognised: bool,
    },
    /// The typed command stayed in the agent's input box through every
    /// Enter: the agent did not take it.
    NotSubmitted {
        screen: String,
    },
    /// Enter was pressed once more: the typed command was still in the
    /// input box after [`crate::bridge::panes::typing::RECEIPT_WAIT`].
    Resubmitted,
    /// An answer's dialog was still on screen unchanged: its key was sent
    /// once more (`tries` keys in all).
    AnswerResent {
        approval_id: ApprovalId,
        tries: u8,
    },
    /// The session or tmux server is gone.
    SessionLost {
        reason: String,
        retrying: bool,
    },
    /// A new session was created (after a loss, or on first use).
    SessionCreated {
        recovered: bool,
    },
    /// The command could not be run at all.
    Failed {
        error: ProjectError,
    },
    /// The agent pane this project uses (for hook routing).
    Attached {
        pane: crate::control::PaneId,
    },
    /// An answer to an approval was typed (or could not be).
    Answered {
        approval_id: ApprovalId,
        by: String,
        label: String,
        reply: Reply,
        result: Result<(), ProjectError>,
    },
    /// Free text answering a question was typed (or could not be).
    Replied {
        approval_id: ApprovalId,
        by: String,
        text: String,
        reply: Reply,
        result: Result<(), ProjectError>,
    },
    /// `/gsd:cancel`: the agent's interrupt keys (`keys`, as a person
    /// calls them) were sent, or there was nothing to cancel.
    Cancelled {
        by: String,
        keys: String,
        reply: Reply,
        result: Result<(), ProjectError>,
    },
    /// The interrupt keys went to the pane `waited` ago, and the turn
    /// they were sent to is still running: the screen did not confirm it.
    InterruptNotConfirmed {
        by: String,
        keys: String,
        reply: Reply,
        waited: Duration,
    },
    /// `/gsd:keys`: the keys went to the pane, or could not.
    KeysSent {
        keys: Vec<crate::bridge::panes::keys::NamedKey>,
        by: String,
        reply: Reply,
        result: Result<(), ProjectError>,
    },
    /// `/gsd:mode`: the footer shows `mode` now, or it could not be reached.
    ModeSet {
        by: String,
        reply: Reply,
        result: Result<PermissionMode, ProjectError>,
    },
    /// What the project is doing now (sent when it changes).
    Status(ProjectStatus),
    /// The pane's screen for `/gsd:screen` (`None`: no pane attached),
    /// as text and as cells for a picture.
    Screen {
        reply: Reply,
        /// The screen, or why no pane is attached.
        screen: Result<String, ProjectError>,
        grid: Option<crate::render::Grid>,
    },
    /// The watching client ended under a command (`reason`) and a new
    /// one took over: the command is followed on.
    Reconnected {
        reason: String,
    },
    /// The project's host could not be reached (`ssh`'s own message);
    /// probing it again with backoff.
    HostDown {
        error: String,
    },
}

/// How a turn ended, besides its output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnEnding {
    Finished,
    /// The user stopped it (answered No, pressed Esc): the agent's row.
    Interrupted(String),
    /// The agent refused the command itself (`Unknown command: …`).
    Rejected(String),
    /// The turn ended on its error, already told to the chat as an error
    /// card, and the agent said nothing else: no result card follows (an
    /// error turn is reported once).
    Failed,
}

#[derive(Debug, Clone)]
pub struct ProjectEvent {
    pub project: ProjectName,
    /// The command this is about, if any.
    pub job: Option<Job>,
    pub kind: ProjectEventKind,
}

/// What a project is doing, for `/gsd:status`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProjectStatus {
    pub attached: bool,
    /// A new agent is starting: commands wait until it is ready.
    pub starting: bool,
    pub running: Option<String>,
    pub busy: bool,
    pub awaiting_approval: Option<String>,
    pub last_progress: Option<String>,
    pub queued: usize,
    /// The agent's permission mode, as its footer shows it.
    pub mode: Option<PermissionMode>,
}

/// Where the outcome of a request from chat is told.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub target: ChatTarget,
    /// The chat message the request came in (the answer replies to it).
    pub reply_to: Option<String>,
}

/// What a project actor is asked to do. None of these waits for an answer:
/// outcomes come back as [`ProjectEvent`]s, so the daemon never waits on a
/// project (one stuck project cannot hold up the others' chats).
pub enum ProjectCmd {
    Submit(Job),
    /// A command from before a restart: typed if it never was, resolved
    /// from the screen if its typing was cut short, followed to its result
    /// if it started.
    Resume(Job),
    /// Type an option key for the approval `approval_id`. When no command
    /// is running (a restart, or `clawmux run --answer`), `follow` becomes
    /// the running command so the rest of the turn is reported.
    Answer {
        approval_id: ApprovalId,
        /// The prompt's question and body as the chat was shown them: after
        /// a restart the actor may know the same prompt under another id,
        /// and a key goes only to the dialog the chat saw.
        question: String,
        body: String,
        key: String,
        follow: Option<Job>,
        /// Who answered, and the option's label (for [`ProjectEventKind::Answered`]).
        by: String,
        label: String,
        reply: Reply,
    },
    /// Free text answering a question (a reply to its card): `focus` is
    /// the key of the question's text field, `text` goes in it.
    Type {
        approval_id: ApprovalId,
        question: String,
        body: String,
        focus: String,
        text: String,
        by: String,
        reply: Reply,
    },
    Cancel {
        by: String,
        reply: Reply,
    },
    /// `/gsd:keys`: send these keys to the agent's pane.
    Keys {
        keys: Vec<crate::bridge::panes::keys::NamedKey>,
        by: String,
        reply: Reply,
    },
    /// `/gsd:mode <mode>`: cycle the agent's mode (shift+tab) until its
    /// footer shows `mode`.
    SetMode {
        mode: PermissionMode,
        by: String,
        reply: Reply,
    },
    /// `/gsd:screen`: the pane's screen as it shows now.
    Screen {
        reply: Reply,
    },
    /// Claude Code's `Stop` hook fired in this pane: the turn is over;
    /// `answer` is its final text, `transcript` the session record it
    /// names (read by the actor where its profile says the answer is
    /// there: the core does no file I/O; a turn the record says ended on
    /// an API error ends as [`ProjectCmd::HookFailure`] does).
    HookStop {
        answer: Option<String>,
        transcript: Option<std::path::PathBuf>,
    },
    /// Claude Code's `StopFailure` hook: the turn ended on an API error,
    /// which ends the running command as an error (see
    /// [`super::runner::JobRunner::hook_failed`]).
    HookFailure(AgentFailure),
    /// A permission notification: a prompt is (about to be) on screen.
    HookApproval,
    /// The `PermissionRequest` hook: what the coming dialog asks.
    HookPermission(ToolRequest),
    /// A task hook: the agent's task list moved.
    HookTask(TaskNews),
}
