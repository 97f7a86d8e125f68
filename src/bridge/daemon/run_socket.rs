//! `run.sock`: where a running `serve` takes `clawmux run`s, in the state
//! directory (mode 0600 in a 0700 directory: this user's shells only, as
//! the hook socket). A caller writes one JSON line, its [`RunAsk`]; `serve`
//! answers in JSON lines ([`RunNews`]): the command's progress as it comes,
//! then the outcome, or why the ask was refused.

use std::fs;
use std::io;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use futures_util::{SinkExt, StreamExt};
use serde::{Deserialize, Serialize};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::{Semaphore, mpsc};
use tokio_util::codec::{Framed, LinesCodec};

use crate::bridge::daemon::{RunCall, RunReply};
use crate::bridge::runs::{Outcome, RunAsk, RunResult};

/// The socket's name in the state directory.
pub const RUN_SOCKET: &str = "run.sock";
/// Longest line either side writes: an ask is a message (bounded far
/// below by what an agent takes), an outcome a turn's bounded output.
const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;
/// Callers served at once; more wait for the listener to accept them.
const MAX_CALLERS: usize = 16;

/// One line of `serve`'s answer to a run.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunNews {
    Progress(String),
    Outcome(Box<Outcome>),
    /// Bad input: nothing was done.
    Refused(String),
}

/// Why a run could not be asked of `serve`.
#[derive(Debug, thiserror::Error)]
pub enum RunSocketError {
    #[error("cannot listen on {path}: {source}")]
    Listen {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{0} is not a socket: remove it, or move it away")]
    NotASocket(PathBuf),
    #[error("talking to serve: {0}")]
    Talk(#[from] tokio_util::codec::LinesCodecError),
    #[error("talking to serve: {0}")]
    Json(#[from] serde_json::Error),
    #[error("serve ended before the run did")]
    Ended,
}

pub fn socket_path(state_dir: &Path) -> PathBuf {
    state_dir.join(RUN_SOCKET)
}

/// Listens on `run.sock` in `state_dir`, handing each caller's run to the
/// daemon through `calls`. The caller must own the state directory (its
/// lock): a socket left there is a stopped process's, and is replaced.
pub fn listen(state_dir: &Path, calls: mpsc::Sender<RunCall>) -> Result<(), RunSocketError> {
    let path = socket_path(state_dir);
    let listen_error = |source| RunSocketError::Listen {
        path: path.clone(),
        source,
    };
    match fs::symlink_metadata(&path) {
        Ok(meta) if meta.file_type().is_socket() => fs::remove_file(&path).map_err(listen_error)?,
        Ok(_) => return Err(RunSocketError::NotASocket(path)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(listen_error(e)),
    }
    let listener = UnixListener::bind(&path).map_err(listen_error)?;
    fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).map_err(listen_error)?;
    tokio::spawn(async move {
        let slots = Arc::new(Semaphore::new(MAX_CALLERS));
        loop {
            let Ok(slot) = slots.clone().acquire_owned().await else {
                return;
            };
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let calls = calls.clone();
            tokio::spawn(async move {
                if let Err(e) = serve_caller(stream, calls).await {
                    tracing::debug!("a run's caller: {e}");
                }
                drop(slot);
            });
        }
    });
    Ok(())
}

async fn serve_caller(
    stream: UnixStream,
    calls: mpsc::Sender<RunCall>,
) -> Result<(), RunSocketError> {
    let mut lines = Framed::new(stream, LinesCodec::new_with_max_length(MAX_LINE_BYTES));
    let Some(line) = lines.next().await else {
        return Ok(());
    };
    let ask: RunAsk = match serde_json::from_str(&line?) {
        Ok(ask) => ask,
        Err(e) => {
            let why = format!("not a run clawmux asks: {e}");
            return send(&mut lines, &RunNews::Refused(why)).await;
        }
    };
    let (call, mut replies) = RunCall::new(ask);
    if calls.send(call).await.is_err() {
        return Err(RunSocketError::Ended);
    }
    loop {
        let news = match replies.next().await {
            Some(RunReply::Progress(summary)) => RunNews::Progress(summary),
            Some(RunReply::Done(Ok(outcome))) => RunNews::Outcome(Box::new(outcome)),
            Some(RunReply::Done(Err(why))) => RunNews::Refused(why),
            None => return Err(RunSocketError::Ended),
        };
        send(&mut lines, &news).await?;
        if !matches!(news, RunNews::Progress(_)) {
            return Ok(());
        }
    }
}

async fn send(
    lines: &mut Framed<UnixStream, LinesCodec>,
    news: &RunNews,
) -> Result<(), RunSocketError> {
    Ok(lines.send(serde_json::to_string(news)?).await?)
}

/// `serve`'s run socket in `state_dir`, if a `serve` listens there.
pub async fn connect(state_dir: &Path) -> Option<UnixStream> {
    UnixStream::connect(socket_path(state_dir)).await.ok()
}

/// Asks `ask` of the `serve` at the other end of `stream`, telling
/// `on_progress` the command's progress; the run's result.
pub async fn ask(
    stream: UnixStream,
    ask: &RunAsk,
    mut on_progress: impl FnMut(&str),
) -> Result<RunResult, RunSocketError> {
    let mut lines = Framed::new(stream, LinesCodec::new_with_max_length(MAX_LINE_BYTES));
    lines.send(serde_json::to_string(ask)?).await?;
    while let Some(line) = lines.next().await {
        match serde_json::from_str(&line?)? {
            RunNews::Progress(summary) => on_progress(&summary),
            RunNews::Outcome(outcome) => return Ok(Ok(*outcome)),
            RunNews::Refused(why) => return Ok(Err(why)),
        }
    }
    Err(RunSocketError::Ended)
}
