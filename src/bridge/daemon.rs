//! The daemon's core: one task that owns the chat side. It takes chat events
//! (messages, clicks), project events (from each project's actor) and hook
//! events, applies the policy, and turns everything into cards in the
//! outbox and lines in the event log.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::task::TaskTracker;

use super::chat::{CONSOLE_USER, CardClick, ChatEvent, ChatMessage, ClickAnswer, ToastLevel};
use super::config::Config;
use super::hosts::Hosts;
use super::names;
use super::pairing::Pairing;
use super::policy::{Decision, Policy};
use super::project::{
    ApprovalSeen, Job, ProjectCmd, ProjectEvent, ProjectEventKind, ProjectHandle, ProjectSetup,
    ProjectStatus,
};
use super::router::{self, Builtin, Route};
use super::texts::{HELP, button, error_guidance, output_markdown, spec_of};
use crate::detect::Profiles;
use crate::feishu::card::{self, Card};
use crate::hooks::{HookEvent, HookKind, HookSignal};
use crate::store::SharedState;
use crate::store::clock;
use crate::store::state::{
    ChatTarget, JobRecord, OutboxEntry, OutboxOp, PendingApproval, ProjectRecord,
};

mod adopt;
mod hosts;

/// Project events waiting for the daemon at most.
const PROJECT_EVENT_CAPACITY: usize = 256;
/// How long a status request waits for a project actor.
const STATUS_BUDGET: Duration = Duration::from_millis(2000);
/// How long typing an answer may take (the actor may be attaching).
const ANSWER_BUDGET: Duration = Duration::from_secs(10);
/// Console answers to denied senders are sent once per sender per run.
const TICK: Duration = Duration::from_millis(500);

/// Everything the daemon is started with.
pub struct DaemonSetup {
    pub config: Arc<Config>,
    pub shared: SharedState,
    pub profiles: Profiles,
    pub state_dir: PathBuf,
    /// The command that runs the simulated agent (`clawmux sim-agent`).
    pub sim_agent: String,
    /// Where the project actors run. An actor stops with its daemon; after
    /// stopping the daemon, closing this and waiting on it makes sure none
    /// is still at work (recreating a session the operator just removed).
    pub actors: TaskTracker,
}

/// A command's progress card updates: at most one per interval, latest wins.
#[derive(Default)]
struct Throttle {
    last_patch: Option<Instant>,
    pending: Option<Card>,
}

pub struct Daemon {
    setup: DaemonSetup,
    policy: Policy,
    pairing: Pairing,
    projects: HashMap<String, ProjectHandle>,
    /// Agent pane (`%N`) -> project, for hooks.
    panes: HashMap<String, String>,
    /// Unfinished commands by id (mirrored in the state file).
    jobs: HashMap<String, JobRecord>,
    throttles: HashMap<String, Throttle>,
    denied_told: HashSet<String>,
    /// A project actor's id of a prompt -> the persisted approval it is.
    aliases: HashMap<String, String>,
    /// Every tmux server's watch session, shared by its projects.
    hosts: Hosts,
    events_tx: mpsc::Sender<ProjectEvent>,
    events_rx: mpsc::Receiver<ProjectEvent>,
}

impl Daemon {
    pub fn new(setup: DaemonSetup) -> Daemon {
        let (events_tx, events_rx) = mpsc::channel(PROJECT_EVENT_CAPACITY);
        let hosts = Hosts::new(&setup.config);
        Daemon {
            policy: Policy::new(setup.config.policy.clone()),
            pairing: Pairing::new(&setup.state_dir),
            setup,
            projects: HashMap::new(),
            panes: HashMap::new(),
            jobs: HashMap::new(),
            throttles: HashMap::new(),
            denied_told: HashSet::new(),
            aliases: HashMap::new(),
            hosts,
            events_tx,
            events_rx,
        }
    }

    /// Runs until the chat side closes.
    pub async fn run(
        mut self,
        mut chat: mpsc::Receiver<ChatEvent>,
        mut hooks: mpsc::Receiver<HookEvent>,
    ) {
        self.resume_projects().await;
        let mut tick = tokio::time::interval(TICK);
        loop {
            tokio::select! {
                event = chat.recv() => match event {
                    Some(ChatEvent::Message(m)) => self.on_message(m).await,
                    Some(ChatEvent::Click(c)) => self.on_click(c).await,
                    None => return,
                },
                Some(event) = self.events_rx.recv() => self.on_project_event(event),
                Some(hook) = hooks.recv() => self.on_hook(hook).await,
                _ = tick.tick() => self.flush_progress(),
            }
        }
    }

    fn log(&self, kind: &str, fields: Value) {
        self.setup.shared.log.record(kind, fields);
    }

    /// Projects with pending approvals get their actors back at start-up, so
    /// buttons pressed before the restart still work.
    /// Commands not typed yet are sent again; a started one is followed
    /// to its result (at once, or when its pending approval is answered).
    /// Agent windows whose sessions were killed meanwhile are closed.
    async fn resume_projects(&mut self) {
        self.hosts.resume().await;
        let (jobs, approvals) = self
            .setup
            .shared
            .read(|s| (s.jobs.clone(), s.approvals.clone()));
        let mut projects: Vec<String> = approvals.values().map(|a| a.project.clone()).collect();
        projects.extend(jobs.iter().map(|j| j.project.clone()));
        projects.sort();
        projects.dedup();
        for p in &projects {
            if let Err(e) = self.project(p) {
                self.log("failed", json!({"project": p, "error": e}));
            }
        }
        for r in jobs {
            self.jobs.insert(r.id.clone(), r.clone());
            let Some(handle) = self.projects.get(&r.project).cloned() else {
                continue;
            };
            let job = self.job_of(&r);
            // A started command runs again in the actor (even while its
            // prompt waits), so later ones queue behind it.
            let cmd = if r.started {
                ProjectCmd::Adopt(job)
            } else {
                ProjectCmd::Submit(job)
            };
            self.log(
                "resumed",
                json!({"project": r.project, "job": r.id, "started": r.started}),
            );
            let _ = handle.send(cmd).await;
        }
    }

    // ---- cards ----------------------------------------------------------

    /// A new card for the outbox, and its handle (for later patches).
    fn new_card(target: &ChatTarget, reply_to: Option<&str>, card: &Card) -> (String, OutboxEntry) {
        let handle = uuid::Uuid::new_v4().to_string();
        let entry = OutboxEntry {
            uuid: uuid::Uuid::new_v4().to_string(),
            op: OutboxOp::Send {
                target: target.clone(),
                handle: handle.clone(),
                reply_to: reply_to.map(String::from),
            },
            card: serde_json::to_value(card).unwrap_or(Value::Null),
            text: card.to_text(),
            created_ms: clock::now_ms(),
        };
        (handle, entry)
    }

    /// Queues a new card; returns its handle (for later patches).
    fn send(&self, target: &ChatTarget, reply_to: Option<&str>, card: &Card) -> String {
        let (handle, entry) = Self::new_card(target, reply_to, card);
        self.setup.shared.update(|s| s.outbox.push_back(entry));
        handle
    }

    /// Sends `card` for job `id` and marks its record (given the card's
    /// handle) in one state update: after a restart, both or neither.
    fn send_for_job(&mut self, id: &str, card: &Card, mark: impl FnOnce(&mut JobRecord, &str)) {
        let Some(job) = self.jobs.get_mut(id) else {
            return;
        };
        let (handle, entry) = Self::new_card(&job.target, job.reply_to.as_deref(), card);
        mark(job, &handle);
        let record = job.clone();
        self.setup.shared.update(|s| {
            s.outbox.push_back(entry);
            if let Some(slot) = s.jobs.iter_mut().find(|x| x.id == record.id) {
                *slot = record;
            }
        });
    }

    fn send_all(&self, target: &ChatTarget, reply_to: Option<&str>, cards: &[Card]) {
        let entries = cards
            .iter()
            .map(|card| Self::new_card(target, reply_to, card).1);
        self.setup.shared.update(|s| s.outbox.extend(entries));
    }

    fn patch(&self, handle: &str, card: &Card) {
        let entry = OutboxEntry {
            uuid: uuid::Uuid::new_v4().to_string(),
            op: OutboxOp::Patch {
                handle: handle.to_string(),
            },
            card: serde_json::to_value(card).unwrap_or(Value::Null),
            text: card.to_text(),
            created_ms: clock::now_ms(),
        };
        self.setup.shared.update(|s| s.queue_patch(entry));
    }

    fn error(
        &self,
        target: &ChatTarget,
        reply_to: Option<&str>,
        title: &str,
        text: &str,
        guidance: &str,
    ) {
        let buttons = vec![
            button("Projects", json!({"action": "projects"})),
            button("Help", json!({"action": "help"})),
        ];
        self.send(
            target,
            reply_to,
            &card::error_card(title, text, guidance, buttons),
        );
    }

    // ---- chat messages --------------------------------------------------

    async fn on_message(&mut self, m: ChatMessage) {
        if !self.admit(&m) {
            return;
        }
        self.log(
            "message",
            json!({"sender": m.sender, "text": m.text, "chat": target_id(&m.target)}),
        );
        let reply_to = Some(m.message_id.as_str()).filter(|_| m.target != ChatTarget::Console);
        if self.answer_by_reply(&m).await {
            return;
        }
        match router::route(&m.text) {
            Route::Usage(usage) => self.error(&m.target, reply_to, "Missing argument", &usage, ""),
            Route::Unknown {
                command,
                suggestion,
            } => {
                let hint = match suggestion {
                    Some(s) => format!("Did you mean `{s}`? Send `/gsd:help` for the list."),
                    None => "Send `/gsd:help` for the commands clawmux knows.".into(),
                };
                self.error(&m.target, reply_to, "Unknown command", &command, &hint);
            }
            Route::Builtin(b) => self.builtin(b, &m.target, reply_to, &m.sender).await,
            Route::Agent(text) => self.submit(&m.target, reply_to, &text, &m.sender).await,
        }
    }

    /// Applies the access policy; false when the message is not acted on.
    fn admit(&mut self, m: &ChatMessage) -> bool {
        if m.target == ChatTarget::Console {
            return true;
        }
        let paired = self.pairing.allowed().unwrap_or_default();
        let chat_id = target_id(&m.target);
        match self.policy.check(
            &m.sender,
            m.kind,
            &chat_id,
            m.mentions_bot,
            &paired,
            Instant::now(),
        ) {
            Decision::Allow => true,
            Decision::Ignore => false,
            Decision::Limited => {
                self.log("denied", json!({"sender": m.sender, "chat": chat_id, "reason": "rate limit", "text": m.text}));
                let text = "You are sending messages faster than this bot accepts; this one was dropped. Try again in a minute.";
                self.send(
                    &m.target,
                    Some(&m.message_id),
                    &card::info_card("Slow down", text),
                );
                false
            }
            Decision::Pair => match self.pairing.request(&m.sender) {
                Ok(code) => {
                    self.log("pairing", json!({"sender": m.sender, "code": code}));
                    let text = format!(
                        "I don't know you yet. Your pairing code is **{code}**.\nAsk the operator to run `clawmux pairing approve {code}`."
                    );
                    self.send(
                        &m.target,
                        Some(&m.message_id),
                        &card::info_card("Pairing needed", &text),
                    );
                    false
                }
                Err(e) => {
                    self.log(
                        "denied",
                        json!({"sender": m.sender, "reason": format!("pairing failed: {e}")}),
                    );
                    false
                }
            },
            Decision::Deny { reason } => {
                self.log(
                    "denied",
                    json!({"sender": m.sender, "chat": chat_id, "reason": reason, "text": m.text}),
                );
                if self.policy.reply_to_denied() && self.denied_told.insert(m.sender.clone()) {
                    let text =
                        "Sorry, you are not allowed to use this bot. Ask its operator for access.";
                    self.send(
                        &m.target,
                        Some(&m.message_id),
                        &card::info_card("Not allowed", text),
                    );
                }
                false
            }
        }
    }

    /// A reply to a question's card answers the question with its text.
    async fn answer_by_reply(&mut self, m: &ChatMessage) -> bool {
        let Some(parent) = &m.parent_id else {
            return false;
        };
        let found = self.setup.shared.read(|s| {
            s.approvals
                .values()
                .find(|a| s.cards.get(&a.card) == Some(parent))
                .cloned()
        });
        let Some(approval) = found else { return false };
        if let Err(e) = names::validate_typed_text(&m.text) {
            self.error(
                &m.target,
                Some(&m.message_id),
                "Cannot type that",
                &e.to_string(),
                "",
            );
            return true;
        }
        let paired = self.pairing.allowed().unwrap_or_default();
        if !self.policy.may_approve(&m.sender, &paired) {
            self.log(
                "denied",
                json!({"sender": m.sender, "reason": "not an approver", "approval": approval.id}),
            );
            return true;
        }
        let project = match self.project(&approval.project) {
            Ok(p) => p,
            Err(e) => {
                self.error(
                    &m.target,
                    Some(&m.message_id),
                    "Project unavailable",
                    &e,
                    "",
                );
                return true;
            }
        };
        let text = m.text.clone();
        match project
            .ask(|done| ProjectCmd::Type { text, done })
            .await
            .and_then(|r| r)
        {
            Ok(()) => self.resolve(&approval, &m.sender, &m.text),
            Err(e) => self.error(&m.target, Some(&m.message_id), "Could not answer", &e, ""),
        }
        true
    }

    async fn submit(
        &mut self,
        target: &ChatTarget,
        reply_to: Option<&str>,
        text: &str,
        sender: &str,
    ) {
        if let Err(e) = names::validate_typed_text(text) {
            self.error(
                target,
                reply_to,
                "Cannot send that to the agent",
                &e.to_string(),
                "",
            );
            return;
        }
        let Some(project) = self.current_project(target) else {
            let guidance =
                "Create one with `/gsd:new-project <name>` or pick one with `/gsd:use <name>`.";
            self.error(target, reply_to, "No project selected", text, guidance);
            return;
        };
        self.run_in(&project, target, reply_to, text, sender).await;
    }

    async fn run_in(
        &mut self,
        project: &str,
        target: &ChatTarget,
        reply_to: Option<&str>,
        text: &str,
        sender: &str,
    ) {
        let job = Job {
            id: uuid::Uuid::new_v4().to_string(),
            text: text.to_string(),
            target: target.clone(),
            message_id: reply_to.map(String::from),
            timeout: self.setup.config.timeout_for(text),
            retried: false,
        };
        let record = JobRecord {
            id: job.id.clone(),
            project: project.to_string(),
            text: text.to_string(),
            target: target.clone(),
            reply_to: reply_to.map(String::from),
            progress: None,
            started: false,
            queued: false,
            created_ms: clock::now_ms(),
        };
        self.jobs.insert(job.id.clone(), record.clone());
        self.setup.shared.update(|s| {
            if let Some(p) = s.projects.get_mut(project) {
                p.last_command = Some(text.to_string());
            }
            s.jobs.push(record);
        });
        self.log(
            "command",
            json!({"project": project, "sender": sender, "text": text, "job": job.id}),
        );
        let sent = match self.project(project) {
            Ok(handle) => handle.send(ProjectCmd::Submit(job)).await,
            Err(e) => Err(e),
        };
        if let Err(e) = sent {
            self.error(target, reply_to, "Project unavailable", &e, "");
        }
    }

    fn current_project(&self, target: &ChatTarget) -> Option<String> {
        let chat = target_id(target);
        self.setup.shared.read(|s| {
            s.chats
                .get(&chat)
                .filter(|p| s.projects.contains_key(*p))
                .cloned()
        })
    }

    /// The actor of `name`, started on first use.
    fn project(&mut self, name: &str) -> Result<ProjectHandle, String> {
        if let Some(h) = self.projects.get(name) {
            return Ok(h.clone());
        }
        let record = self.setup.shared.read(|s| s.projects.get(name).cloned());
        let host = match &record {
            Some(r) => r.host.clone(),
            None => self.setup.config.host_for(name).map(str::to_string),
        };
        let watch = self
            .hosts
            .watch(host.as_deref())
            .map_err(|e| e.to_string())?;
        let workspace = match &record {
            Some(r) => PathBuf::from(&r.workspace),
            None => self
                .hosts
                .workspace_root(host.as_deref())
                .map_err(|e| e.to_string())?
                .join(name),
        };
        let mut setup = ProjectSetup::new(
            &self.setup.config,
            &self.setup.profiles,
            &self.setup.sim_agent,
            name,
            workspace,
            watch,
        )
        .map_err(|e| e.to_string())?;
        if let Some(adopted) = record.as_ref().and_then(|r| r.adopted.as_deref()) {
            super::hosts::bind_adopted(&mut setup.spec, adopted)?;
        }
        let handle = ProjectHandle::spawn(setup, self.events_tx.clone(), &self.setup.actors);
        self.projects.insert(name.to_string(), handle.clone());
        Ok(handle)
    }

    // ---- built-ins -------------------------------------------------------

    async fn builtin(
        &mut self,
        b: Builtin,
        target: &ChatTarget,
        reply_to: Option<&str>,
        sender: &str,
    ) {
        match b {
            Builtin::Help => {
                self.send(target, reply_to, &card::info_card("clawmux help", HELP));
            }
            Builtin::Projects => {
                let names: Vec<String> = self
                    .setup
                    .shared
                    .read(|s| s.projects.keys().cloned().collect());
                let current = self.current_project(target);
                self.send(
                    target,
                    reply_to,
                    &card::projects_card(&names, current.as_deref()),
                );
            }
            Builtin::Use(name) => self.use_project(target, reply_to, &name),
            Builtin::NewProject(name) => self.new_project(target, reply_to, &name, sender).await,
            Builtin::Status => self.status(target, reply_to).await,
            Builtin::Cancel => {
                let Some(project) = self.current_project(target) else {
                    self.error(target, reply_to, "No project selected", "/gsd:cancel", "");
                    return;
                };
                let result = match self.project(&project) {
                    Ok(h) => h
                        .ask(|done| ProjectCmd::Cancel { done })
                        .await
                        .and_then(|r| r),
                    Err(e) => Err(e),
                };
                match result {
                    Ok(()) => {
                        self.log("cancel", json!({"project": project, "sender": sender}));
                        let text = format!("Sent Esc to the agent of **{project}**.");
                        self.send(target, reply_to, &card::info_card("Cancelled", &text));
                    }
                    Err(e) => self.error(target, reply_to, "Nothing to cancel", &e, ""),
                }
            }
            Builtin::Answer(key) => {
                let Some(project) = self.current_project(target) else {
                    self.error(target, reply_to, "No project selected", "/gsd:answer", "");
                    return;
                };
                let pending = self.setup.shared.read(|s| {
                    s.approvals
                        .values()
                        .filter(|a| a.project == project)
                        .max_by_key(|a| a.created_ms)
                        .cloned()
                });
                let Some(approval) = pending else {
                    self.error(
                        target,
                        reply_to,
                        "No approval pending",
                        &format!("/gsd:answer {key}"),
                        "",
                    );
                    return;
                };
                let answer = self.answer(&approval, &key, sender).await;
                if let Err(e) = answer {
                    self.error(target, reply_to, "Could not answer", &e, "");
                }
            }
            Builtin::Adopt { target: pane, name } => {
                self.adopt(target, reply_to, sender, &pane, name.as_deref())
                    .await;
            }
            Builtin::Release(name) => self.release(target, reply_to, sender, &name),
            Builtin::Sessions => {
                let md = self.hosts.sessions_markdown().await;
                self.send(target, reply_to, &card::info_card("Sessions", &md));
            }
        }
    }

    fn use_project(&mut self, target: &ChatTarget, reply_to: Option<&str>, name: &str) {
        if let Err(e) = names::validate_project(name) {
            self.error(
                target,
                reply_to,
                "Invalid project name",
                name,
                &e.to_string(),
            );
            return;
        }
        let exists = self.setup.shared.read(|s| s.projects.contains_key(name));
        if !exists {
            let guidance = format!(
                "Create it with `/gsd:new-project {name}`, or list projects with `/gsd:projects`."
            );
            self.error(target, reply_to, "No such project", name, &guidance);
            return;
        }
        let chat = target_id(target);
        self.setup
            .shared
            .update(|s| s.chats.insert(chat, name.to_string()));
        self.log("use", json!({"project": name, "chat": target_id(target)}));
        self.send(
            target,
            reply_to,
            &card::info_card(
                "Project selected",
                &format!("Messages now go to **{name}**."),
            ),
        );
    }

    async fn new_project(
        &mut self,
        target: &ChatTarget,
        reply_to: Option<&str>,
        name: &str,
        sender: &str,
    ) {
        let (name, host) = match names::split_project_host(name) {
            Ok((name, host)) => (name, host.or(self.setup.config.host_for(name))),
            Err(e) => {
                self.error(target, reply_to, "Invalid project name", name, &e);
                return;
            }
        };
        let (workspace, remote) = match self.hosts.workspace_root(host) {
            Ok(root) => (
                root.join(name),
                host.is_some_and(|h| self.hosts.is_remote(h)),
            ),
            Err(e) => {
                let guidance = "Projects run on the hosts of the config's [hosts] tables.";
                self.error(target, reply_to, "Unknown host", &e.to_string(), guidance);
                return;
            }
        };
        let host = host.map(str::to_string);
        // A remote host's pane makes its own workspace (see PaneSpec).
        if !remote && let Err(e) = std::fs::create_dir_all(&workspace) {
            let text = format!("{}: {e}", workspace.display());
            self.error(target, reply_to, "Cannot create the workspace", &text, "");
            return;
        }
        let chat = target_id(target);
        let ws = workspace.display().to_string();
        let existed = self.setup.shared.update(|s| {
            s.chats.insert(chat, name.to_string());
            let existed = s.projects.contains_key(name);
            s.projects
                .entry(name.to_string())
                .or_insert_with(|| ProjectRecord {
                    workspace: ws.clone(),
                    created_ms: clock::now_ms(),
                    last_command: None,
                    host: host.clone(),
                    adopted: None,
                });
            existed
        });
        self.log(
            "project",
            json!({"project": name, "workspace": ws, "created": !existed, "host": host}),
        );
        let on = host
            .as_deref()
            .map(|h| format!(" on host **{h}**"))
            .unwrap_or_default();
        let text = if existed {
            format!("**{name}** already exists; messages now go to it.")
        } else {
            format!("Created **{name}**{on} in `{ws}`. Starting the agent and GSD's project setup…")
        };
        self.send(target, reply_to, &card::info_card("Project ready", &text));
        if !existed {
            self.run_in(name, target, reply_to, "/gsd:new-project", sender)
                .await;
        }
    }

    async fn status(&mut self, target: &ChatTarget, reply_to: Option<&str>) {
        let names: Vec<String> = self
            .setup
            .shared
            .read(|s| s.projects.keys().cloned().collect());
        if names.is_empty() {
            self.send(
                target,
                reply_to,
                &card::info_card("Status", "No projects yet: `/gsd:new-project <name>`."),
            );
            return;
        }
        let mut md =
            String::from("| project | state | progress | queued | host |\n|---|---|---|---|---|\n");
        for name in names {
            let status = match self.projects.get(&name) {
                Some(h) => tokio::time::timeout(STATUS_BUDGET, h.ask(ProjectCmd::Status))
                    .await
                    .ok()
                    .and_then(Result::ok),
                None => None,
            };
            let host = self.host_label(&name);
            md.push_str(&status_row(&name, &host, status.as_ref()));
        }
        self.send(target, reply_to, &card::info_card("Status", &md));
    }

    // ---- clicks ----------------------------------------------------------

    async fn on_click(&mut self, c: CardClick) {
        let action = c.value.get("action").and_then(Value::as_str).unwrap_or("");
        self.log(
            "click",
            json!({"operator": c.operator, "action": action, "value": c.value}),
        );
        let answer = match action {
            "approval" => return self.click_approval(c).await,
            "select_project" => match &c.option {
                Some(p) => {
                    self.use_project(&c.target, None, p);
                    ClickAnswer::toast(ToastLevel::Success, format!("Now using {p}"))
                }
                None => ClickAnswer::toast(ToastLevel::Warning, "No project chosen"),
            },
            "help" | "projects" | "status" => {
                let b = match action {
                    "help" => Builtin::Help,
                    "projects" => Builtin::Projects,
                    _ => Builtin::Status,
                };
                self.builtin(b, &c.target, None, &c.operator).await;
                ClickAnswer::toast(ToastLevel::Info, "Sent")
            }
            _ => {
                self.log("denied", json!({"operator": c.operator, "reason": "unknown card action", "value": c.value}));
                ClickAnswer::toast(ToastLevel::Error, "This button is not recognised")
            }
        };
        if let Some(respond) = c.respond {
            let _ = respond.send(answer);
        }
    }

    /// Answers Feishu at once (it allows 3 s), then types the answer.
    async fn click_approval(&mut self, mut c: CardClick) {
        let field = |k: &str| {
            c.value
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let (id, project, session, key) = (
            field("approval_id"),
            field("project"),
            field("session"),
            field("option"),
        );
        let pending = self.setup.shared.read(|s| s.approvals.get(&id).cloned());
        let checked = match pending {
            None => Err((
                ToastLevel::Warning,
                "This approval was already answered.".to_string(),
            )),
            Some(a) if a.project != project || a.session != session => {
                let why = json!({"operator": c.operator, "reason": "approval does not match its project", "value": c.value});
                self.log("denied", why);
                Err((
                    ToastLevel::Error,
                    "This button does not match its approval.".to_string(),
                ))
            }
            Some(a) => match self.check_answer(&a, &key, &c.operator) {
                Ok(label) => Ok((a, label)),
                Err(e) => Err((ToastLevel::Error, e)),
            },
        };
        let respond = |c: &mut CardClick, answer: ClickAnswer| {
            if let Some(respond) = c.respond.take() {
                let _ = respond.send(answer);
            }
        };
        let (approval, label) = match checked {
            Ok(ok) => ok,
            Err((level, text)) => return respond(&mut c, ClickAnswer::toast(level, text)),
        };
        respond(
            &mut c,
            ClickAnswer::toast(ToastLevel::Success, format!("Answered: {label}")),
        );
        // Clicks are handled one at a time: a second click finds the
        // approval resolved (or still pending if typing failed).
        if let Err(e) = self.type_answer(&approval, &key, &c.operator, &label).await {
            self.error(
                &c.target,
                None,
                "Could not answer the approval",
                &e,
                "Press the button again, or answer in the terminal.",
            );
        }
    }

    /// May `who` answer `approval` with `key`? The option's label if so.
    fn check_answer(
        &self,
        approval: &PendingApproval,
        key: &str,
        who: &str,
    ) -> Result<String, String> {
        let paired = self.pairing.allowed().unwrap_or_default();
        if who != CONSOLE_USER && !self.policy.may_approve(who, &paired) {
            let why =
                json!({"operator": who, "reason": "not an approver", "approval": approval.id});
            self.log("denied", why);
            return Err("You are not allowed to answer approvals.".into());
        }
        match approval.options.iter().find(|o| o.key == key) {
            Some(option) => Ok(option.label.clone()),
            None => {
                let keys: Vec<&str> = approval.options.iter().map(|o| o.key.as_str()).collect();
                Err(format!(
                    "`{key}` is not one of the options ({})",
                    keys.join(", ")
                ))
            }
        }
    }

    /// Checks and types `key` for `approval`; marks it resolved.
    async fn answer(
        &mut self,
        approval: &PendingApproval,
        key: &str,
        who: &str,
    ) -> Result<String, String> {
        let label = self.check_answer(approval, key, who)?;
        self.type_answer(approval, key, who, &label).await?;
        Ok(label)
    }

    /// Types a checked answer into the approval's pane; marks it resolved.
    async fn type_answer(
        &mut self,
        approval: &PendingApproval,
        key: &str,
        who: &str,
        label: &str,
    ) -> Result<(), String> {
        let project = self.project(&approval.project)?;
        // The command this prompt belongs to, so a restarted actor reports
        // the rest of its turn (the actor ignores it when it runs one).
        let started = self
            .jobs
            .values()
            .filter(|j| j.project == approval.project && j.started);
        let follow = match started.min_by_key(|j| j.created_ms) {
            Some(j) => self.job_of(j),
            None => self.follow_job(approval, label),
        };
        let ask = project.ask(|done| ProjectCmd::Answer {
            approval_id: approval.id.clone(),
            question: approval.question.clone(),
            key: key.to_string(),
            follow: Some(follow),
            done,
        });
        tokio::time::timeout(ANSWER_BUDGET, ask)
            .await
            .map_err(|_| "The agent pane did not take the answer in time.".to_string())?
            .and_then(|r| r)?;
        self.resolve(approval, who, label);
        Ok(())
    }

    /// The command a project adopts when an approval is answered while it
    /// runs none (after a restart): its result goes where the approval went.
    fn follow_job(&mut self, approval: &PendingApproval, label: &str) -> Job {
        let text = format!("answer: {label}");
        let job = Job {
            id: uuid::Uuid::new_v4().to_string(),
            text: text.clone(),
            target: approval.target.clone(),
            message_id: None,
            timeout: self.setup.config.timeout_for(""),
            retried: true,
        };
        let record = JobRecord {
            id: job.id.clone(),
            project: approval.project.clone(),
            text,
            target: approval.target.clone(),
            reply_to: None,
            progress: None,
            started: true,
            queued: false,
            created_ms: clock::now_ms(),
        };
        self.jobs.insert(job.id.clone(), record.clone());
        self.setup.shared.update(|s| s.jobs.push(record));
        job
    }

    /// The actor's form of a recorded command.
    fn job_of(&self, r: &JobRecord) -> Job {
        Job {
            id: r.id.clone(),
            text: r.text.clone(),
            target: r.target.clone(),
            message_id: r.reply_to.clone(),
            timeout: self.setup.config.timeout_for(&r.text),
            retried: false,
        }
    }

    /// A command is over: forget it (memory and state file).
    fn finish_job(&mut self, id: &str) -> Option<JobRecord> {
        self.throttles.remove(id);
        let job = self.jobs.remove(id)?;
        self.setup.shared.update(|s| s.jobs.retain(|j| j.id != id));
        Some(job)
    }

    /// The approval is answered: forget it and turn its card grey.
    fn resolve(&mut self, approval: &PendingApproval, who: &str, choice: &str) {
        self.setup
            .shared
            .update(|s| s.approvals.remove(&approval.id));
        self.log("approval_answered", json!({"project": approval.project, "approval": approval.id, "by": who, "choice": choice}));
        let when = clock::rfc3339(clock::now_ms());
        self.patch(
            &approval.card,
            &card::approval_resolved_card(&spec_of(approval), who, choice, &when),
        );
    }

    // ---- project events ---------------------------------------------------

    fn on_project_event(&mut self, e: ProjectEvent) {
        let project = e.project.clone();
        let job_id = e.job.as_ref().map(|j| j.id.clone());
        match e.kind {
            ProjectEventKind::Attached { pane } => {
                self.panes.retain(|_, p| *p != project);
                // Hooks come from the local server's panes only: pane ids
                // of other servers would collide with them.
                if self.is_local(&project) {
                    self.panes.insert(pane, project);
                }
            }
            ProjectEventKind::HostDown { error } => self.on_host_down(&project, &e.job, &error),
            ProjectEventKind::Reconnected { reason } => {
                self.on_reconnected(&project, &e.job, &reason);
            }
            ProjectEventKind::Queued { position } => {
                self.log(
                    "queued",
                    json!({"project": project, "job": job_id, "position": position}),
                );
                // A command resumed after a restart queues again: its chat
                // was told already.
                if let Some(id) = &job_id
                    && self.jobs.get(id).is_some_and(|j| !j.queued)
                {
                    let text = format!(
                        "The agent is busy; your command is number {position} in the queue."
                    );
                    let card = card::info_card("Queued", &text);
                    self.send_for_job(id, &card, |j, _| j.queued = true);
                }
            }
            ProjectEventKind::Started => {
                self.log("started", json!({"project": project, "job": job_id}));
                if let Some(id) = &job_id
                    && let Some(j) = self.jobs.get(id)
                {
                    let card = card::progress_card(&self.title(j), "Running…", None, "");
                    self.send_for_job(id, &card, |j, handle| {
                        j.started = true;
                        j.progress = Some(handle.to_string());
                    });
                    self.throttles.entry(id.clone()).or_default().last_patch = Some(Instant::now());
                }
            }
            ProjectEventKind::Progress {
                summary,
                percent,
                tail,
            } => {
                self.log(
                    "detection",
                    json!({"project": project, "detection": "progress", "summary": summary}),
                );
                if let Some(id) = &job_id
                    && let Some(j) = self.jobs.get(id)
                {
                    let card = card::progress_card(&self.title(j), &summary, percent, &tail);
                    self.throttles.entry(id.clone()).or_default().pending = Some(card);
                }
                self.flush_progress();
            }
            ProjectEventKind::Approval(seen) => self.on_approval(&project, &e.job, seen),
            ProjectEventKind::ApprovalGone { approval_id } => {
                // A prompt re-detected after a restart kept its first id.
                let approval_id = self.aliases.remove(&approval_id).unwrap_or(approval_id);
                let pending = self
                    .setup
                    .shared
                    .update(|s| s.approvals.remove(&approval_id));
                if let Some(a) = pending {
                    self.log(
                        "approval_gone",
                        json!({"project": project, "approval": approval_id}),
                    );
                    self.patch(&a.card, &card::approval_gone_card(&spec_of(&a)));
                }
            }
            ProjectEventKind::Error { line, context } => {
                self.log(
                    "detection",
                    json!({"project": project, "detection": "error", "line": line}),
                );
                let (target, reply_to) = self
                    .job_target(&e.job)
                    .unwrap_or_else(|| (self.chat_of(&project), None));
                let command = e.job.as_ref().map(|j| j.text.as_str()).unwrap_or("");
                let guidance = error_guidance(&project, command, &line, &context);
                self.error(
                    &target,
                    reply_to.as_deref(),
                    "The agent reported an error",
                    &context,
                    &guidance,
                );
            }
            ProjectEventKind::Completed {
                output,
                seconds,
                errors,
            } => {
                self.log("completed", json!({"project": project, "job": job_id, "seconds": seconds, "errors": errors}));
                if let Some(j) = job_id.as_deref().and_then(|id| self.finish_job(id)) {
                    if let Some(h) = &j.progress {
                        let stage = format!("Finished in {seconds}s");
                        self.patch(
                            h,
                            &card::progress_card(&self.title(&j), &stage, Some(100), ""),
                        );
                    }
                    let md = output_markdown(&output);
                    self.send_all(
                        &j.target,
                        j.reply_to.as_deref(),
                        &card::result_cards(&self.title(&j), &md),
                    );
                }
            }
            ProjectEventKind::TimedOut { screen, seconds } => {
                self.log(
                    "timeout",
                    json!({"project": project, "job": job_id, "seconds": seconds}),
                );
                if let Some(j) = job_id.as_deref().and_then(|id| self.finish_job(id)) {
                    let title = format!("Timed out after {seconds}s: {}", self.title(&j));
                    let guidance = "The command is still running in its pane. Send `/gsd:cancel` to stop it or `/gsd:status` to check.";
                    self.error(&j.target, j.reply_to.as_deref(), &title, &screen, guidance);
                }
            }
            ProjectEventKind::SessionLost { reason, retrying } => {
                // Its prompts died with the session: close their cards.
                let stale: Vec<PendingApproval> = self.setup.shared.update(|s| {
                    let ids: Vec<String> = s
                        .approvals
                        .values()
                        .filter(|a| a.project == project)
                        .map(|a| a.id.clone())
                        .collect();
                    ids.iter().filter_map(|id| s.approvals.remove(id)).collect()
                });
                for a in stale {
                    self.patch(&a.card, &card::approval_gone_card(&spec_of(&a)));
                }
                self.log(
                    "session_lost",
                    json!({"project": project, "reason": reason, "retrying": retrying}),
                );
                if let Some((target, reply_to)) = self.job_target(&e.job) {
                    let text = if retrying {
                        format!(
                            "The tmux session of **{project}** was lost ({reason}). Recreating it, restoring context, and retrying your command once."
                        )
                    } else {
                        format!("The tmux session of **{project}** was lost again ({reason}).")
                    };
                    self.send(
                        &target,
                        reply_to.as_deref(),
                        &card::info_card("Session lost", &text),
                    );
                }
            }
            ProjectEventKind::SessionCreated { recovered } => {
                self.log(
                    "session_created",
                    json!({"project": project, "recovered": recovered}),
                );
            }
            ProjectEventKind::Failed { error } => {
                self.log(
                    "failed",
                    json!({"project": project, "job": job_id, "error": error}),
                );
                let job = job_id.as_deref().and_then(|id| self.finish_job(id));
                let (target, reply_to) = match job {
                    Some(j) => (j.target, j.reply_to),
                    None => (self.chat_of(&project), None),
                };
                self.error(&target, reply_to.as_deref(), "Command failed", &error, "");
            }
        }
    }

    fn on_approval(&mut self, project: &str, job: &Option<Job>, seen: ApprovalSeen) {
        // A restarted actor finds a prompt that already has a card: same pane,
        // question and options. Keep the card; remember the actor's id for it.
        let known = self.setup.shared.read(|s| {
            s.approvals
                .values()
                .find(|a| {
                    a.project == project
                        && a.pane == seen.pane
                        && a.question == seen.question
                        && a.options == seen.options
                })
                .map(|a| a.id.clone())
        });
        if let Some(id) = known {
            self.log(
                "approval_found_again",
                json!({"project": project, "approval": id}),
            );
            self.aliases.insert(seen.id, id);
            return;
        }
        self.log("approval", json!({"project": project, "approval": seen.id, "kind": seen.kind, "question": seen.question}));
        let (target, reply_to) = self
            .job_target(job)
            .unwrap_or_else(|| (self.chat_of(project), None));
        let mut pending = PendingApproval {
            id: seen.id,
            project: project.to_string(),
            session: seen.session,
            pane: seen.pane,
            kind: seen.kind,
            question: seen.question,
            options: seen.options,
            target: target.clone(),
            card: String::new(),
            created_ms: clock::now_ms(),
        };
        let mut card = card::approval_card(&spec_of(&pending));
        if target == ChatTarget::Console {
            let keys: Vec<&str> = pending.options.iter().map(|o| o.key.as_str()).collect();
            card = card.push(crate::feishu::card::Element::note(format!(
                "Answer with /gsd:answer {}",
                keys.join("|")
            )));
        }
        // The approval and its card are saved together: a crash cannot
        // leave a card without its approval, or an approval without a card.
        let (handle, entry) = Self::new_card(&target, reply_to.as_deref(), &card);
        pending.card = handle;
        self.setup.shared.update(|s| {
            s.approvals.insert(pending.id.clone(), pending);
            s.outbox.push_back(entry);
        });
    }

    /// Sends due progress updates: at most one per card per interval.
    fn flush_progress(&mut self) {
        let interval = Duration::from_secs(self.setup.config.progress.interval_secs);
        let now = Instant::now();
        let mut due = Vec::new();
        for (id, t) in &mut self.throttles {
            let Some(handle) = self.jobs.get(id).and_then(|j| j.progress.as_ref()) else {
                continue;
            };
            if t.last_patch
                .is_none_or(|at| now.duration_since(at) >= interval)
                && let Some(card) = t.pending.take()
            {
                t.last_patch = Some(now);
                due.push((handle.clone(), card));
            }
        }
        for (handle, card) in due {
            self.patch(&handle, &card);
        }
    }

    fn job_target(&self, job: &Option<Job>) -> Option<(ChatTarget, Option<String>)> {
        let job = job.as_ref()?;
        Some((job.target.clone(), job.message_id.clone()))
    }

    /// Where news of a project goes when no command asked: the first chat
    /// that uses it, else the console.
    fn chat_of(&self, project: &str) -> ChatTarget {
        self.setup.shared.read(|s| {
            s.chats
                .iter()
                .find(|(_, p)| *p == project)
                .map(|(chat, _)| target_of(chat))
                .unwrap_or(ChatTarget::Console)
        })
    }

    // ---- hooks -------------------------------------------------------------

    async fn on_hook(&mut self, hook: HookEvent) {
        let Some(pane) = &hook.tmux_pane else { return };
        let Some(project) = self.panes.get(pane).cloned() else {
            self.log(
                "hook_ignored",
                json!({"pane": pane, "reason": "not a clawmux pane"}),
            );
            return;
        };
        let workspace = self
            .setup
            .shared
            .read(|s| s.projects.get(&project).map(|p| p.workspace.clone()));
        if let (Some(cwd), Some(ws)) = (&hook.cwd, &workspace)
            && !cwd.starts_with(ws)
        {
            self.log(
                "hook_ignored",
                json!({"pane": pane, "reason": "cwd is not the project's workspace"}),
            );
            return;
        }
        self.log(
            "hook",
            json!({"project": project, "pane": pane, "event": hook_name(&hook.event)}),
        );
        let cmd = match hook.signal() {
            Some(HookSignal::TurnEnded) => ProjectCmd::HookStop,
            Some(HookSignal::ApprovalPending) => ProjectCmd::HookApproval,
            _ => return,
        };
        if let Some(h) = self.projects.get(&project) {
            let _ = h.send(cmd).await;
        }
    }
}

fn hook_name(k: &HookKind) -> &str {
    match k {
        HookKind::Stop { .. } => "Stop",
        HookKind::Notification { .. } => "Notification",
        HookKind::PermissionRequest { .. } => "PermissionRequest",
        HookKind::SessionStart { .. } => "SessionStart",
        HookKind::Other(name) => name,
    }
}

/// The chat id a target stands for (`console` for the console).
fn target_id(t: &ChatTarget) -> String {
    match t {
        ChatTarget::Chat { id } => id.clone(),
        ChatTarget::Console => CONSOLE_USER.to_string(),
    }
}

fn target_of(chat: &str) -> ChatTarget {
    if chat == CONSOLE_USER {
        ChatTarget::Console
    } else {
        ChatTarget::Chat {
            id: chat.to_string(),
        }
    }
}

fn status_row(name: &str, host: &str, status: Option<&ProjectStatus>) -> String {
    let Some(s) = status else {
        return format!("| {name} | not attached | | | {host} |\n");
    };
    let state = if s.awaiting_approval.is_some() {
        "awaiting approval"
    } else if s.busy || s.running.is_some() {
        "busy"
    } else if s.attached {
        "idle"
    } else {
        "not attached"
    };
    let progress = s.last_progress.as_deref().unwrap_or("");
    format!(
        "| {name} | {state} | {progress} | {} | {host} |\n",
        s.queued
    )
}
