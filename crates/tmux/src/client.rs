//! The async control client: one `tmux -C` process, a writer task that
//! sends commands in order, and a reader task that decodes the stream,
//! answers commands FIFO and fans notifications out to subscribers.
//!
//! Commands and replies: tmux runs a client's stdin commands in order and
//! answers each with one `flags=1` block, so the oldest waiting command gets
//! the next such block. `flags=0` blocks (the start-up command, hooks) answer
//! nobody. The reader never waits on anyone: replies go through oneshot
//! channels, events through bounded broadcast queues (see [`super::events`]):
//! one with every event, and one per pane subscribed to, with that pane's
//! events and those about no pane, so that many panes can share a client
//! without each subscriber reading (and falling behind on) all of them.
//!
//! Long on purpose: one `tmux -C` process, its writer and reader tasks, and
//! the FIFO correlation between them belong together.

use std::collections::{HashMap, VecDeque};
use std::process::Stdio;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tokio_util::sync::{CancellationToken, DropGuard};

use super::command::TmuxCommand;
use super::config::ClientConfig;
use super::error::TmuxError;
use super::events::{ClientEvent, EVENT_CAPACITY, Subscription};
use super::flood::FloodGuard;
use clawmux_control::{Decoder, Event, Notification, PaneId, Reply, SessionId};

/// Bytes read from tmux's stdout at a time: several full `%output` lines
/// (tmux writes at most ~32 KiB escaped per line) per system call.
const READ_CHUNK_BYTES: usize = 64 * 1024;
/// Commands queued for the writer task before `command()` waits: far more
/// than any caller has in flight; back-pressure beyond that is fine.
const COMMAND_QUEUE: usize = 256;
/// Last bytes of tmux's stderr kept to explain a failure.
const STDERR_TAIL_BYTES: usize = 4096;
/// How long to wait for the process to exit after its stdout closed, before
/// killing it: tmux exits at once; a stuck `ssh` must not hang the client.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// The one command whose reply holds real `%pause`/`%continue` lines
/// (`refresh-client -A '%N:pause'`): tmux writes them while it runs it.
const PANE_OUTPUT_COMMAND: &str = "refresh-client";
/// Pause between typing chat text and pressing Enter: text and Enter in one
/// read look like a paste to Claude Code and would not be submitted.
pub const TEXT_ENTER_GAP: Duration = Duration::from_millis(150);

/// A handle on one tmux control client; cheap to clone. When the last
/// handle is dropped the control client detaches (the tmux server and its
/// sessions stay).
#[derive(Clone, Debug)]
pub struct Client {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    commands: mpsc::Sender<Queued>,
    events: broadcast::WeakSender<ClientEvent>,
    routes: Arc<Mutex<Routes>>,
    end: watch::Receiver<Option<TmuxError>>,
    session: std::sync::OnceLock<(SessionId, String)>,
    pid: Option<u32>,
    _stop: DropGuard,
}

/// A command on its way to tmux.
#[derive(Debug)]
struct Queued {
    line: String,
    reply: oneshot::Sender<Result<Vec<Bytes>, TmuxError>>,
    /// What the reader publishes when the reply arrives: in stream order,
    /// after the output tmux sent before it, before the output after it.
    on_reply: Option<OnReply>,
}

#[derive(Debug, Clone, Copy)]
enum OnReply {
    /// A `capture-pane`: its screen as [`ClientEvent::Resync`]; `always`
    /// even if it equals the last snapshot (after `%pause` output was
    /// lost), otherwise only a changed screen.
    Snapshot {
        pane: PaneId,
        always: bool,
        cursor: Option<Cursor>,
    },
    /// The flood guard paused (`flooding`) or continued the pane:
    /// [`ClientEvent::Flood`].
    Flood { pane: PaneId, flooding: bool },
}

/// The per-pane event queues (see the module doc), by pane; `None` is the
/// queue of events about no pane only. Closed at the end.
#[derive(Debug, Default)]
struct Routes {
    queues: HashMap<Option<PaneId>, broadcast::Sender<ClientEvent>>,
    closed: bool,
}

/// Commands written to tmux, waiting for their block; closed at the end.
#[derive(Debug, Default)]
struct Pending {
    waiting: VecDeque<Queued>,
    closed: Option<TmuxError>,
}

/// Starts `tmux -C` as configured and waits for its start-up block and
/// `%session-changed` before returning.
pub async fn connect(config: ClientConfig) -> Result<Client, TmuxError> {
    let argv = config.argv()?;
    let (program, args) = argv.split_first().ok_or_else(|| TmuxError::Spawn {
        program: String::new(),
        reason: "empty program".into(),
    })?;
    let mut child = Command::new(program)
        .args(args)
        .env("LANG", "C.UTF-8")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| TmuxError::Spawn {
            program: program.clone(),
            reason: e.to_string(),
        })?;
    let pid = child.id();
    let (stdin, stdout, stderr) =
        match (child.stdin.take(), child.stdout.take(), child.stderr.take()) {
            (Some(i), Some(o), Some(e)) => (i, o, e),
            _ => {
                return Err(TmuxError::Spawn {
                    program: program.clone(),
                    reason: "no pipes to the child".into(),
                });
            }
        };

    let pending = Arc::new(Mutex::new(Pending::default()));
    let routes = Arc::new(Mutex::new(Routes::default()));
    let (events, _) = broadcast::channel(EVENT_CAPACITY);
    let (end_tx, end_rx) = watch::channel(None);
    let (ready_tx, ready_rx) = oneshot::channel();
    let (commands, command_rx) = mpsc::channel(COMMAND_QUEUE);
    let stop = CancellationToken::new();
    let stderr_tail = tokio::spawn(keep_tail(stderr));
    let flood = config
        .flood
        .map(|limits| Arc::new(Mutex::new(FloodGuard::new(limits))));
    tokio::spawn(write_commands(command_rx, stdin, pending.clone()));
    let shared = Arc::new_cyclic(|weak: &Weak<Shared>| {
        let reader = Reader {
            pending,
            events: events.clone(),
            routes: routes.clone(),
            startup: Some(Startup {
                ready: ready_tx,
                block_done: false,
                session: None,
            }),
            exit: None,
            shared: weak.clone(),
            flood,
        };
        tokio::spawn(reader.run(stdout, child, stop.clone(), end_tx, stderr_tail));
        Shared {
            commands,
            events: events.downgrade(),
            routes,
            end: end_rx,
            session: std::sync::OnceLock::new(),
            pid,
            _stop: stop.drop_guard(),
        }
    });
    drop(events);

    let seconds = config.startup_timeout.as_secs();
    let session = match tokio::time::timeout(config.startup_timeout, ready_rx).await {
        Ok(Ok(Ok(session))) => session,
        Ok(Ok(Err(error))) => return Err(error),
        Ok(Err(_)) => return Err(TmuxError::Io("the reader stopped during start-up".into())),
        Err(_) => return Err(TmuxError::StartupTimeout { seconds }),
    };
    let _ = shared.session.set(session);
    let client = Client { shared };
    client.configure(&config).await?;
    Ok(client)
}

impl Client {
    /// Settings that need a running client: size and flow control.
    async fn configure(&self, config: &ClientConfig) -> Result<(), TmuxError> {
        if let Some((w, h)) = config.size {
            self.command(
                TmuxCommand::new("refresh-client")
                    .arg("-C")
                    .arg(format!("{w}x{h}")),
            )
            .await?;
        }
        if let Some(after) = config.pause_after {
            let seconds = after.as_secs() + u64::from(after.subsec_nanos() > 0);
            self.command(
                TmuxCommand::new("refresh-client")
                    .arg("-f")
                    .arg(format!("pause-after={}", seconds.max(1))),
            )
            .await?;
        }
        Ok(())
    }

    /// Sends one command and waits for its reply lines. A `%error` reply is
    /// [`TmuxError::Command`] with tmux's message; the end of the client is
    /// its typed reason, never a hang.
    pub async fn command(&self, command: impl Into<TmuxCommand>) -> Result<Vec<Bytes>, TmuxError> {
        self.request(command.into(), None).await
    }

    async fn request(
        &self,
        command: TmuxCommand,
        on_reply: Option<OnReply>,
    ) -> Result<Vec<Bytes>, TmuxError> {
        let line = command.line()?.to_string();
        let (reply, answer) = oneshot::channel();
        if self
            .shared
            .commands
            .send(Queued {
                line,
                reply,
                on_reply,
            })
            .await
            .is_err()
        {
            return Err(self.end_reason());
        }
        answer.await.unwrap_or_else(|_| Err(self.end_reason()))
    }

    /// Types `text` literally into `pane` (`send-keys -l`), then presses
    /// Enter in a separate command [`TEXT_ENTER_GAP`] later.
    pub async fn send_text(&self, pane: PaneId, text: &str) -> Result<(), TmuxError> {
        if !text.is_empty() {
            self.command(
                TmuxCommand::new("send-keys")
                    .target_pane(pane)
                    .arg("-l")
                    .arg("--")
                    .arg(text),
            )
            .await?;
            tokio::time::sleep(TEXT_ENTER_GAP).await;
        }
        self.send_keys(pane, &["Enter"]).await
    }

    /// Presses keys by name (`Escape`, `Enter`, `1`, `C-c`) in `pane`.
    pub async fn send_keys(&self, pane: PaneId, keys: &[&str]) -> Result<(), TmuxError> {
        self.command(TmuxCommand::new("send-keys").target_pane(pane).args(keys))
            .await
            .map(drop)
    }

    /// The pane's screen with colours (`capture-pane -p -e`), rows joined by
    /// `\r\n`, then a move to where its cursor is (see `screen_bytes`).
    pub async fn capture_screen(&self, pane: PaneId) -> Result<Bytes, TmuxError> {
        let cursor = self.cursor(pane).await?;
        let rows = self
            .command(
                TmuxCommand::new("capture-pane")
                    .arg("-p")
                    .arg("-e")
                    .target_pane(pane),
            )
            .await?;
        Ok(screen_bytes(&rows, cursor))
    }

    /// Where `pane`'s cursor is, asked just before a capture: `None` if
    /// tmux's answer does not parse.
    async fn cursor(&self, pane: PaneId) -> Result<Option<Cursor>, TmuxError> {
        let display = TmuxCommand::new("display-message")
            .arg("-p")
            .target_pane(pane)
            .arg("#{cursor_x} #{cursor_y}");
        let reply = self.command(display).await?;
        Ok(reply.first().and_then(|line| Cursor::parse(line)))
    }

    /// Captures the pane's screen and has the reader publish it in stream
    /// order (see [`Queued::on_reply`]). Text only: detection reads no
    /// colours, and `-e` makes tmux (the bottleneck in a flood) work six
    /// times as hard per capture.
    async fn snapshot(&self, pane: PaneId, always: bool) -> Result<Bytes, TmuxError> {
        let cursor = self.cursor(pane).await?;
        let on_reply = OnReply::Snapshot {
            pane,
            always,
            cursor,
        };
        let capture = TmuxCommand::new("capture-pane").arg("-p").target_pane(pane);
        let rows = self.request(capture, Some(on_reply)).await?;
        Ok(screen_bytes(&rows, cursor))
    }

    /// Sets `pane`'s output to this client to `pause` or `continue` with
    /// `refresh-client -A`, then publishes `on_reply` in stream order.
    async fn set_pane_output(
        &self,
        pane: PaneId,
        state: &str,
        on_reply: Option<OnReply>,
    ) -> Result<(), TmuxError> {
        let command = TmuxCommand::new(PANE_OUTPUT_COMMAND)
            .arg("-A")
            .arg(format!("{pane}:{state}"));
        self.request(command, on_reply).await.map(drop)
    }

    /// A new subscriber to every event from now on (see [`Subscription`]
    /// for the overflow policy).
    pub fn subscribe(&self) -> Subscription {
        let events = self.shared.events.upgrade().map(|tx| tx.subscribe());
        Subscription::new(events, self.shared.end.clone())
    }

    /// A new subscriber to `pane`'s events and to those about no pane
    /// (see [`ClientEvent::pane`]), from now on.
    pub fn subscribe_pane(&self, pane: PaneId) -> Subscription {
        self.subscribe_route(Some(pane))
    }

    /// A new subscriber to the events about no pane only, from now on:
    /// notifications such as `%sessions-changed`, lags, the end.
    pub fn subscribe_general(&self) -> Subscription {
        self.subscribe_route(None)
    }

    fn subscribe_route(&self, route: Option<PaneId>) -> Subscription {
        let mut routes = lock(&self.shared.routes);
        let events = (!routes.closed).then(|| {
            let queue = routes.queues.entry(route);
            queue
                .or_insert_with(|| broadcast::channel(EVENT_CAPACITY).0)
                .subscribe()
        });
        Subscription::new(events, self.shared.end.clone())
    }

    /// The session this client is attached to (from start-up).
    pub fn session(&self) -> (SessionId, &str) {
        match self.shared.session.get() {
            Some((id, name)) => (*id, name),
            None => (SessionId(0), ""),
        }
    }

    /// The process id of the `tmux -C` client (or its command prefix).
    pub fn process_id(&self) -> Option<u32> {
        self.shared.pid
    }

    /// Why the client ended, if it has.
    pub fn ended(&self) -> Option<TmuxError> {
        self.shared.end.borrow().clone()
    }

    /// Waits until the client ends and says why.
    pub async fn closed(&self) -> TmuxError {
        let mut end = self.shared.end.clone();
        match end.wait_for(Option::is_some).await {
            Ok(reason) => reason.clone().unwrap_or_else(|| self.end_reason()),
            Err(_) => self.end_reason(),
        }
    }

    fn end_reason(&self) -> TmuxError {
        self.ended()
            .unwrap_or_else(|| TmuxError::Io("the client's tasks stopped".into()))
    }
}

/// A cursor position as tmux gives it (`#{cursor_x} #{cursor_y}`, from 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cursor {
    x: u16,
    y: u16,
}

impl Cursor {
    fn parse(line: &[u8]) -> Option<Cursor> {
        let text = std::str::from_utf8(line).ok()?;
        let (x, y) = text.trim().split_once(' ')?;
        Some(Cursor {
            x: x.parse().ok()?,
            y: y.parse().ok()?,
        })
    }
}

/// Captured rows joined by `\r\n`, then a move to `cursor`: fed after a
/// clear, it leaves a terminal model as the pane is, cursor included, so
/// the output that follows (a program's echo, a relative move) lands
/// where it does in the pane.
fn screen_bytes(rows: &[Bytes], cursor: Option<Cursor>) -> Bytes {
    let mut screen = BytesMut::new();
    for (i, row) in rows.iter().enumerate() {
        if i > 0 {
            screen.extend_from_slice(b"\r\n");
        }
        screen.extend_from_slice(row);
    }
    if let Some(Cursor { x, y }) = cursor {
        let to = format!("\x1b[{};{}H", u32::from(y) + 1, u32::from(x) + 1);
        screen.extend_from_slice(to.as_bytes());
    }
    screen.freeze()
}

/// The writer task: registers each command as waiting, then writes it, so a
/// reply can never arrive before its command is registered, and a caller
/// that gives up mid-way can never leave half a line on tmux's stdin.
async fn write_commands(
    mut commands: mpsc::Receiver<Queued>,
    mut stdin: ChildStdin,
    pending: Arc<Mutex<Pending>>,
) {
    while let Some(queued) = commands.recv().await {
        let mut line = Vec::with_capacity(queued.line.len() + 1);
        line.extend_from_slice(queued.line.as_bytes());
        line.push(b'\n');
        {
            let mut pending = lock(&pending);
            if let Some(end) = &pending.closed {
                let _ = queued.reply.send(Err(end.clone()));
                continue;
            }
            pending.waiting.push_back(queued);
        }
        if stdin.write_all(&line).await.is_err() || stdin.flush().await.is_err() {
            // tmux is gone: the reader sees the end and fails every waiting command.
            break;
        }
    }
    // Dropping stdin here detaches the control client (EOF on its input).
}

/// The last [`STDERR_TAIL_BYTES`] of a stream, once it closes.
async fn keep_tail(mut stream: impl AsyncRead + Unpin) -> Vec<u8> {
    let mut tail = Vec::new();
    let mut buf = [0u8; 1024];
    while let Ok(n @ 1..) = stream.read(&mut buf).await {
        tail.extend_from_slice(&buf[..n]);
        let excess = tail.len().saturating_sub(STDERR_TAIL_BYTES);
        tail.drain(..excess);
    }
    tail
}

/// Locks a mutex; a panic elsewhere while holding it leaves plain data
/// (queues, bytes) that is still consistent, so poisoning is ignored.
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Start-up progress: the argv command's block and `%session-changed`.
struct Startup {
    ready: oneshot::Sender<Result<(SessionId, String), TmuxError>>,
    block_done: bool,
    session: Option<(SessionId, String)>,
}

/// The reader task's state.
struct Reader {
    pending: Arc<Mutex<Pending>>,
    events: broadcast::Sender<ClientEvent>,
    routes: Arc<Mutex<Routes>>,
    startup: Option<Startup>,
    /// `%exit` seen as the last event so far, with its reason.
    exit: Option<Option<String>>,
    /// For the `%pause` resync and the flood guard, which send commands of
    /// their own.
    shared: Weak<Shared>,
    flood: Option<Arc<Mutex<FloodGuard>>>,
}

impl Reader {
    async fn run(
        mut self,
        mut stdout: impl AsyncRead + Unpin,
        mut child: Child,
        stop: CancellationToken,
        end: watch::Sender<Option<TmuxError>>,
        stderr_tail: tokio::task::JoinHandle<Vec<u8>>,
    ) {
        let mut decoder = Decoder::new();
        let mut buf = vec![0u8; READ_CHUNK_BYTES];
        let mut io_error = None;
        loop {
            let read = tokio::select! {
                _ = stop.cancelled() => break,
                read = stdout.read(&mut buf) => read,
            };
            match read {
                Ok(0) => break,
                Ok(n) => decoder.feed(&buf[..n], &mut |event| self.on_event(event)),
                Err(e) => {
                    io_error = Some(e.to_string());
                    break;
                }
            }
        }
        decoder.finish(&mut |event| self.on_event(event));
        let status = match tokio::time::timeout(EXIT_GRACE, child.wait()).await {
            Ok(Ok(status)) => status.to_string(),
            Ok(Err(e)) => e.to_string(),
            Err(_) => {
                let _ = child.kill().await;
                "killed: it did not exit after its output closed".to_string()
            }
        };
        let reason = match (self.exit.take(), io_error) {
            (Some(reason), _) => TmuxError::Exited { reason },
            (None, Some(e)) => TmuxError::Io(e),
            (None, None) => {
                // A prefix's children (ssh) may hold stderr open: bounded wait.
                let tail = tokio::time::timeout(EXIT_GRACE, stderr_tail).await;
                let tail = tail.ok().and_then(Result::ok).unwrap_or_default();
                TmuxError::ProcessDied {
                    status,
                    stderr: String::from_utf8_lossy(&tail).trim().to_string(),
                }
            }
        };
        self.end(reason, &end);
    }

    /// Fails every waiting command and start-up, tells every subscriber.
    fn end(mut self, reason: TmuxError, end: &watch::Sender<Option<TmuxError>>) {
        let waiting = {
            let mut pending = lock(&self.pending);
            pending.closed = Some(reason.clone());
            std::mem::take(&mut pending.waiting)
        };
        for queued in waiting {
            let _ = queued.reply.send(Err(reason.clone()));
        }
        if let Some(startup) = self.startup.take() {
            let _ = startup.ready.send(Err(reason.clone()));
        }
        // Set the end before the event stream closes: a late subscriber reads it there.
        end.send_replace(Some(reason.clone()));
        self.emit(ClientEvent::Ended(reason));
        let mut routes = lock(&self.routes);
        routes.closed = true;
        routes.queues.clear();
    }

    /// Sends `event` to every-event subscribers and to its route: a pane's
    /// event to that pane's, others to all. A queue nobody reads any more
    /// is dropped.
    fn emit(&self, event: ClientEvent) {
        {
            let mut routes = lock(&self.routes);
            match event.pane() {
                Some(pane) => {
                    let route = Some(pane);
                    let gone = routes
                        .queues
                        .get(&route)
                        .is_some_and(|queue| queue.send(event.clone()).is_err());
                    if gone {
                        routes.queues.remove(&route);
                    }
                }
                None => routes
                    .queues
                    .retain(|_, queue| queue.send(event.clone()).is_ok()),
            }
        }
        // No subscribers is fine: events are not stored for later.
        let _ = self.events.send(event);
    }

    fn on_event(&mut self, event: Event) {
        // tmux writes nothing after a real `%exit`; one followed by more of
        // the stream was reply text (a `%exit` line can sit inside a block).
        self.exit = None;
        match event {
            Event::Notification(n) => self.on_notification(n),
            Event::Reply(reply) if reply.flags == 1 => self.on_reply(reply),
            Event::Reply(reply) => self.on_startup_block(reply),
            Event::Stray(line) => {
                tracing::warn!(line = %String::from_utf8_lossy(&line), "tmux wrote a stray line");
                self.emit(ClientEvent::Stray(line));
            }
            Event::Invalid { line, error } => {
                tracing::warn!(%error, line = %String::from_utf8_lossy(&line), "bad line from tmux");
                self.emit(ClientEvent::Invalid { line, error });
            }
        }
    }

    fn on_notification(&mut self, notification: Notification) {
        match notification {
            Notification::Output { pane, data }
            | Notification::ExtendedOutput { pane, data, .. } => {
                self.guard_flood(pane, data.len());
                return self.emit(ClientEvent::Output { pane, data });
            }
            Notification::Pause { pane } | Notification::Continue { pane }
                if self.in_snapshots(pane) =>
            {
                // The flood guard's own: its `Flood` events say so.
                return;
            }
            Notification::Pause { pane } => {
                tokio::spawn(resync(self.shared.clone(), pane));
            }
            Notification::Exit { ref reason } => self.exit = Some(reason.clone()),
            Notification::SessionChanged { id, ref name } => {
                if let Some(startup) = &mut self.startup {
                    startup.session = Some((id, name.clone()));
                    self.check_started();
                }
            }
            _ => {}
        }
        self.emit(ClientEvent::Notification(notification));
    }

    fn on_reply(&mut self, reply: Reply) {
        let Some(queued) = lock(&self.pending).waiting.pop_front() else {
            tracing::warn!(number = reply.number, "a reply nobody asked for");
            return;
        };
        if queued.line.starts_with(PANE_OUTPUT_COMMAND) {
            self.pane_output_notifications(&reply.lines);
        }
        let result = if reply.ok {
            match queued.on_reply {
                Some(OnReply::Snapshot {
                    pane,
                    always,
                    cursor,
                }) => self.publish_snapshot(pane, always, &reply.lines, cursor),
                Some(OnReply::Flood { pane, flooding }) => self.publish_flood(pane, flooding),
                None => {}
            }
            Ok(reply.lines)
        } else {
            Err(TmuxError::command(&queued.line, &reply.lines))
        };
        // The caller may have given up waiting: that is fine.
        let _ = queued.reply.send(result);
    }

    /// The `%pause`/`%continue` lines tmux writes inside the reply to
    /// `refresh-client -A`, taken as the notifications they are. Only
    /// there: in any other reply (a captured screen) such a line is text a
    /// pane printed, and the decoder keeps it as text.
    fn pane_output_notifications(&mut self, lines: &[Bytes]) {
        for line in lines {
            if let Ok(n @ (Notification::Pause { .. } | Notification::Continue { .. })) =
                clawmux_control::parse_line(line)
            {
                self.on_notification(n);
            }
        }
    }

    fn publish_snapshot(&self, pane: PaneId, always: bool, rows: &[Bytes], cursor: Option<Cursor>) {
        let screen = screen_bytes(rows, cursor);
        // The guard remembers flood snapshots only, to publish their changes.
        let publish = always
            || self
                .flood
                .as_ref()
                .is_none_or(|guard| lock(guard).screen_changed(pane, &screen));
        if publish {
            self.emit(ClientEvent::Resync { pane, screen });
        }
    }

    fn publish_flood(&self, pane: PaneId, flooding: bool) {
        if let (false, Some(guard)) = (flooding, &self.flood) {
            lock(guard).streaming_again(pane, Instant::now());
        }
        self.emit(ClientEvent::Flood { pane, flooding });
    }

    fn in_snapshots(&self, pane: PaneId) -> bool {
        self.flood
            .as_ref()
            .is_some_and(|guard| lock(guard).in_snapshots(pane))
    }

    /// Counts a pane's output; one going over the limit is switched to
    /// snapshots.
    fn guard_flood(&self, pane: PaneId, bytes: usize) {
        let Some(guard) = &self.flood else {
            return;
        };
        let wait = lock(guard).on_output(pane, bytes, Instant::now());
        if let Some(wait) = wait {
            tracing::debug!(%pane, "pane floods: watching its screen instead");
            tokio::spawn(watch_by_snapshots(
                self.shared.clone(),
                guard.clone(),
                pane,
                wait,
            ));
        }
    }

    /// A `flags=0` block: the start-up command's, or a hook's (ignored).
    fn on_startup_block(&mut self, reply: Reply) {
        let Some(startup) = &mut self.startup else {
            return;
        };
        if !reply.ok {
            let message = TmuxError::command("", &reply.lines).to_string();
            if let Some(startup) = self.startup.take() {
                let _ = startup.ready.send(Err(TmuxError::Startup { message }));
            }
            return;
        }
        startup.block_done = true;
        self.check_started();
    }

    fn check_started(&mut self) {
        if let Some(Startup {
            block_done: true,
            session: Some(_),
            ..
        }) = &self.startup
            && let Some(startup) = self.startup.take()
            && let Some(session) = startup.session
        {
            let _ = startup.ready.send(Ok(session));
        }
    }
}

/// After `%pause`: resume output, then publish the screen in stream order,
/// so output after the capture applies on top of it.
async fn resync(shared: Weak<Shared>, pane: PaneId) {
    let Some(shared) = shared.upgrade() else {
        return;
    };
    let client = Client { shared };
    let resynced = match client.set_pane_output(pane, "continue", None).await {
        Ok(()) => client.snapshot(pane, true).await.map(drop),
        Err(e) => Err(e),
    };
    if let Err(e) = resynced {
        tracing::warn!(%pane, error = %e, "resync after %pause failed")
    }
}

/// Watches a flooding pane through snapshots: its output to this client is
/// paused, its screen captured (see [`super::FloodLimits::snapshot_every`])
/// and published when it changed, until the screen stays the same (the
/// flood is over) or `wait` has passed; then one last snapshot, and output
/// continues. The reader
/// publishes [`ClientEvent::Flood`] on the pause's and the continue's
/// replies, so every event between the two is about the screen only.
///
/// Paused, not `off`: tmux before 3.7 keeps a pane's queued output when it
/// is turned off and later reads it from a buffer that has moved on, which
/// kills the server (`fatalx("not enough data")`, tmux issue 5054); pausing
/// discards the queue. A paused pane does not hold tmux back from reading
/// it, so its program runs at full speed. The client's handle is held only
/// while a command is in flight, so dropping the last one still detaches.
async fn watch_by_snapshots(
    shared: Weak<Shared>,
    guard: Arc<Mutex<FloodGuard>>,
    pane: PaneId,
    wait: Duration,
) {
    let client = || shared.upgrade().map(|shared| Client { shared });
    let limits = lock(&guard).limits();
    let flood = |flooding| Some(OnReply::Flood { pane, flooding });
    let watched = async {
        let ended = || TmuxError::Io("the client was dropped".into());
        let paused = client().ok_or_else(ended)?;
        paused.set_pane_output(pane, "pause", flood(true)).await?;
        drop(paused);
        let started = Instant::now();
        let mut last = None;
        let mut quiet = 0;
        let mut every = limits.snapshot_every;
        while quiet < limits.quiet_snapshots && started.elapsed() < wait {
            tokio::time::sleep(every).await;
            let screen = client().ok_or_else(ended)?.snapshot(pane, false).await?;
            let changed = last.as_ref() != Some(&screen);
            if changed {
                (last, quiet) = (Some(screen), 0);
            } else {
                quiet += 1;
            }
            every = limits.next_snapshot_wait(every, changed);
        }
        let client = client().ok_or_else(ended)?;
        client.snapshot(pane, false).await?;
        client.set_pane_output(pane, "continue", flood(false)).await
    };
    if let Err(e) = watched.await {
        tracing::debug!(%pane, error = %e, "stopped watching a flooding pane");
        // Never leave a pane paused: try once more (a closed pane or an
        // ended client fail again, harmlessly).
        if let Some(client) = client() {
            let _ = client.set_pane_output(pane, "continue", flood(false)).await;
        }
        lock(&guard).forget(pane);
    }
}
