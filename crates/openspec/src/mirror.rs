//! Mirroring a change folder to Chorus document drafts. The local files are
//! the source of truth; each is sent as the exact file bytes inside a JSON
//! string (serde_json escapes only `"`, `\` and control characters, like
//! `jq -Rs .`), never re-typed. proposal.md -> `prd`, design.md ->
//! `tech_design`, each `specs/<cap>/spec.md` -> `spec`; tasks.md is never
//! mirrored (Chorus task drafts own tasks). Draft ids are recorded in
//! `<change>/.chorus-mirror.json` after every creation, so a rerun (even after
//! a failure halfway) updates instead of duplicating. `check` compares the
//! server copy byte for byte, allowing the one trailing newline Chorus adds.
//!
//! Reading drafts back uses `chorus_get_proposal {proposalUuid}` and its
//! `documentDrafts[]` (`uuid`, `content`), a tool of the Chorus server
//! besides the proposal and document tools named above; documents use
//! `chorus_get_document`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::change::change_dir;
use super::chorus::{ChorusClient, ChorusError};

/// Where the draft ids live, inside the change folder.
pub const STATE_FILE: &str = ".chorus-mirror.json";

#[derive(Debug, thiserror::Error)]
pub enum MirrorError {
    #[error("no change folder {0}")]
    NoChange(PathBuf),
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{0} is not UTF-8 text, so it cannot travel byte-for-byte in a JSON string; fix its encoding"
    )]
    NotUtf8(PathBuf),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path} is not a mirror record ({reason}); delete it only if the drafts it names are gone"
    )]
    BadState { path: PathBuf, reason: String },
    #[error("{STATE_FILE} belongs to proposal {recorded}, not {given}")]
    OtherProposal { recorded: String, given: String },
    #[error(transparent)]
    Chorus(#[from] ChorusError),
}

/// One mirrored file's Chorus draft.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DraftRecord {
    #[serde(rename = "draftUuid")]
    pub draft_uuid: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
}

/// The persisted mirror record of a change.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MirrorState {
    #[serde(rename = "proposalUuid")]
    pub proposal_uuid: String,
    /// Keyed by the file's path relative to the change folder.
    pub drafts: BTreeMap<String, DraftRecord>,
}

/// A change file that is mirrored, with its Chorus document type and title.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirroredFile {
    /// Relative to the change folder, `/`-separated.
    pub rel: String,
    pub kind: &'static str,
    pub title: String,
}

/// Title of the Chorus document for a capability spec; archive finds the
/// post-approval document by this title.
pub fn spec_title(capability: &str) -> String {
    format!("Spec: {capability}")
}

/// The mirrored files of a change that exist, in a stable order.
pub fn mirrored_files(dir: &Path, title: &str) -> Result<Vec<MirroredFile>, MirrorError> {
    let mut files = Vec::new();
    for (name, kind, prefix) in [
        ("proposal.md", "prd", "PRD"),
        ("design.md", "tech_design", "Tech design"),
    ] {
        if dir.join(name).is_file() {
            files.push(MirroredFile {
                rel: name.into(),
                kind,
                title: format!("{prefix}: {title}"),
            });
        }
    }
    let mut caps = Vec::new();
    collect_specs(&dir.join("specs"), &mut Vec::new(), &mut caps)?;
    caps.sort();
    for cap in caps {
        files.push(MirroredFile {
            rel: format!("specs/{cap}/spec.md"),
            kind: "spec",
            title: spec_title(&cap),
        });
    }
    Ok(files)
}

/// Capability ids (`a` or `area/a`) of every `specs/**/spec.md`, dot folders skipped.
pub(crate) fn collect_specs(
    dir: &Path,
    segments: &mut Vec<String>,
    out: &mut Vec<String>,
) -> Result<(), MirrorError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(MirrorError::Read {
                path: dir.to_path_buf(),
                source,
            });
        }
    };
    for entry in entries {
        let entry = entry.map_err(|source| MirrorError::Read {
            path: dir.to_path_buf(),
            source,
        })?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if name.starts_with('.') {
            continue;
        }
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            segments.push(name);
            collect_specs(&path, segments, out)?;
            segments.pop();
        } else if name == "spec.md" && !segments.is_empty() && path.is_file() {
            out.push(segments.join("/"));
        }
    }
    Ok(())
}

/// The file's bytes as text, refusing anything that is not UTF-8 (it could
/// not be carried unchanged in a JSON string).
pub fn read_exact(path: &Path) -> Result<String, MirrorError> {
    let bytes = std::fs::read(path).map_err(|source| MirrorError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    String::from_utf8(bytes).map_err(|_| MirrorError::NotUtf8(path.to_path_buf()))
}

fn load_state(path: &Path, proposal: &str) -> Result<MirrorState, MirrorError> {
    let raw = match std::fs::read(path) {
        Ok(raw) => raw,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(MirrorState {
                proposal_uuid: proposal.to_string(),
                drafts: BTreeMap::new(),
            });
        }
        Err(source) => {
            return Err(MirrorError::Read {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let state: MirrorState = serde_json::from_slice(&raw).map_err(|e| MirrorError::BadState {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })?;
    if state.proposal_uuid != proposal {
        return Err(MirrorError::OtherProposal {
            recorded: state.proposal_uuid,
            given: proposal.to_string(),
        });
    }
    Ok(state)
}

/// The change folder and its mirror record for `proposal`.
fn open_change(
    root: &Path,
    slug: &str,
    proposal: &str,
) -> Result<(PathBuf, MirrorState), MirrorError> {
    let dir = change_dir(root, slug);
    if !dir.is_dir() {
        return Err(MirrorError::NoChange(dir));
    }
    let state = load_state(&dir.join(STATE_FILE), proposal)?;
    Ok((dir, state))
}

/// Writes the record atomically (temp file, then rename).
fn save_state(path: &Path, state: &MirrorState) -> Result<(), MirrorError> {
    let tmp = path.with_extension("json.tmp");
    let write = |p: &Path, source| MirrorError::Write {
        path: p.to_path_buf(),
        source,
    };
    let text =
        serde_json::to_string_pretty(state).map_err(|e| write(path, std::io::Error::other(e)))?;
    std::fs::write(&tmp, text + "\n").map_err(|e| write(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| write(path, e))
}

/// What one mirror run did to a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Created { rel: String, draft_uuid: String },
    Updated { rel: String, draft_uuid: String },
}

/// Creates or updates the drafts of change `slug` on proposal `proposal`.
/// Halts at the first failure; drafts created before it are already recorded.
pub async fn mirror(
    client: &ChorusClient,
    root: &Path,
    slug: &str,
    proposal: &str,
    title: &str,
) -> Result<Vec<Action>, MirrorError> {
    let (dir, mut state) = open_change(root, slug, proposal)?;
    let state_path = dir.join(STATE_FILE);
    let mut actions = Vec::new();
    for file in mirrored_files(&dir, title)? {
        let content = read_exact(&dir.join(&file.rel))?;
        if let Some(record) = state.drafts.get(&file.rel) {
            let tool = "chorus_pm_update_document_draft";
            let args = json!({"proposalUuid": proposal, "draftUuid": record.draft_uuid, "content": content});
            client.call_tool(tool, args).await?;
            actions.push(Action::Updated {
                rel: file.rel,
                draft_uuid: record.draft_uuid.clone(),
            });
            continue;
        }
        let tool = "chorus_pm_add_document_draft";
        let args = json!({"proposalUuid": proposal, "type": file.kind, "title": file.title, "content": content});
        let draft_uuid = client
            .call_tool(tool, args)
            .await?
            .field(tool, "draftUuid")?;
        state.drafts.insert(
            file.rel.clone(),
            DraftRecord {
                draft_uuid: draft_uuid.clone(),
                kind: file.kind.to_string(),
                title: file.title,
            },
        );
        save_state(&state_path, &state)?;
        actions.push(Action::Created {
            rel: file.rel,
            draft_uuid,
        });
    }
    Ok(actions)
}

/// Whether a server copy equals the local bytes, modulo one trailing `\n`
/// the server may add.
pub fn same_modulo_newline(local: &str, server: &str) -> bool {
    server == local || server.strip_suffix('\n') == Some(local)
}

/// A file whose server copy differs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub rel: String,
    /// First differing byte offset, or why there is nothing to compare.
    pub detail: String,
}

fn describe_difference(local: &str, server: &str) -> String {
    let at = local
        .bytes()
        .zip(server.bytes())
        .position(|(a, b)| a != b)
        .unwrap_or(local.len().min(server.len()));
    format!(
        "first difference at byte {at} (local {} bytes, server {} bytes)",
        local.len(),
        server.len()
    )
}

/// Compares each recorded draft's server content with the local file.
pub async fn check(
    client: &ChorusClient,
    root: &Path,
    slug: &str,
    proposal: &str,
) -> Result<Vec<Mismatch>, MirrorError> {
    let (dir, state) = open_change(root, slug, proposal)?;
    let tool = "chorus_get_proposal";
    let reply = client
        .call_tool(tool, json!({"proposalUuid": proposal}))
        .await?;
    let json = reply.json(tool)?;
    let drafts = json["documentDrafts"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let mut mismatches = Vec::new();
    for file in mirrored_files(&dir, "")? {
        let Some(record) = state.drafts.get(&file.rel) else {
            mismatches.push(Mismatch {
                rel: file.rel,
                detail: "never mirrored (run mirror)".into(),
            });
            continue;
        };
        let local = read_exact(&dir.join(&file.rel))?;
        let server = drafts
            .iter()
            .find(|d| d["uuid"].as_str() == Some(record.draft_uuid.as_str()))
            .and_then(|d| d["content"].as_str());
        match server {
            None => mismatches.push(Mismatch {
                rel: file.rel,
                detail: format!("draft {} not on the server", record.draft_uuid),
            }),
            Some(server) if !same_modulo_newline(&local, server) => mismatches.push(Mismatch {
                detail: describe_difference(&local, server),
                rel: file.rel,
            }),
            Some(_) => {}
        }
    }
    Ok(mismatches)
}

/// The `content` of a Chorus document.
pub async fn document_content(
    client: &ChorusClient,
    document_uuid: &str,
) -> Result<String, ChorusError> {
    let tool = "chorus_get_document";
    client
        .call_tool(tool, json!({"documentUuid": document_uuid}))
        .await?
        .field(tool, "content")
}

/// Finds a project document by type and exact title, paging through
/// `chorus_get_documents` (which filters by project and type only).
pub async fn find_document(
    client: &ChorusClient,
    project: &str,
    kind: &str,
    title: &str,
) -> Result<Option<String>, ChorusError> {
    /// Documents per page requested.
    const PAGE_SIZE: u64 = 100;
    /// Pages read at most: 10 000 documents of one type is beyond any project.
    const MAX_PAGES: u64 = 100;
    let tool = "chorus_get_documents";
    for page in 1..=MAX_PAGES {
        let args =
            json!({"projectUuid": project, "type": kind, "page": page, "pageSize": PAGE_SIZE});
        let json = client.call_tool(tool, args).await?.json(tool)?;
        let docs: Vec<Value> = json["documents"].as_array().cloned().unwrap_or_default();
        if let Some(doc) = docs.iter().find(|d| d["title"].as_str() == Some(title)) {
            return Ok(doc["uuid"].as_str().map(str::to_string));
        }
        if (docs.len() as u64) < PAGE_SIZE {
            break;
        }
    }
    Ok(None)
}
