//! Archiving a finished change and mirroring the merged specs back to Chorus.
//!
//! When is "the last task verified"? Chorus's MCP tools (proposals, drafts,
//! documents, comments) have no task listing, and in OpenSpec the task list of a change is its
//! `tasks.md`, the file `openspec archive` itself checks. So the trigger is:
//! `tasks.md` has at least one checkbox task and every one is checked
//! (OpenSpec's own task-line rule), AND the Chorus proposal's description
//! carries the line `OpenSpec change slug: <slug>` for this slug. Otherwise
//! nothing is done (the strict opt-in of the original skill).
//!
//! Then: `openspec archive <slug> --yes` (never `--skip-specs` or
//! `--no-validate`), and for each capability of the change whose main spec
//! `openspec/specs/<cap>/spec.md` the archive created or changed, the Chorus
//! `spec` document titled [`spec_title`] is found (`chorus_get_documents`,
//! filtered by title client-side), updated with the exact file bytes
//! (`chorus_pm_update_document`) and read back to confirm byte equality
//! (modulo one trailing newline). Any failure after the trigger posts a
//! comment on the proposal with the error and stops; nothing is retried.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::change::{change_dir, slug_from_description};
use super::chorus::{ChorusClient, ChorusError};
use super::cli::OpenSpecCli;
use super::mirror::{
    MirrorError, collect_specs, document_content, find_document, read_exact, same_modulo_newline,
    spec_title,
};
use super::tasks;

#[derive(Debug, thiserror::Error)]
pub enum ArchiveError {
    #[error("no change folder {0}")]
    NoChange(PathBuf),
    /// Reading the proposal (the trigger check) failed; nothing was done.
    #[error("cannot read the proposal: {0}")]
    Proposal(#[from] ChorusError),
    /// A step after the trigger failed; `comment` says whether the failure
    /// was recorded on the proposal.
    #[error("{step}: {error}\n{}", comment_note(comment))]
    Failed {
        step: String,
        error: String,
        comment: Result<(), ChorusError>,
    },
}

fn comment_note(comment: &Result<(), ChorusError>) -> String {
    match comment {
        Ok(()) => "the failure was posted as a comment on the proposal".into(),
        Err(e) => format!("posting the failure comment ALSO failed: {e}"),
    }
}

/// What an archive run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The trigger does not hold; nothing was touched.
    NotReady(String),
    /// Archived; these capability specs were mirrored to these documents.
    Archived { mirrored: Vec<(String, String)> },
}

/// Runs the archive flow for `slug` on proposal `proposal`.
pub async fn archive(
    client: &ChorusClient,
    cli: &OpenSpecCli,
    root: &Path,
    slug: &str,
    proposal: &str,
) -> Result<Outcome, ArchiveError> {
    let dir = change_dir(root, slug);
    if !dir.is_dir() {
        return Err(ArchiveError::NoChange(dir));
    }
    let tasks_text = std::fs::read(dir.join("tasks.md"))
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let (done, total) = tasks::progress(&tasks_text);
    if total == 0 || done < total {
        return Ok(Outcome::NotReady(format!(
            "tasks.md has {done} of {total} tasks checked; archive runs after the last one is verified"
        )));
    }
    let tool = "chorus_get_proposal";
    let reply = client
        .call_tool(tool, json!({"proposalUuid": proposal}))
        .await?;
    let description = reply.field(tool, "description")?;
    if slug_from_description(&description) != Some(slug) {
        return Ok(Outcome::NotReady(format!(
            "the proposal description has no line \"OpenSpec change slug: {slug}\""
        )));
    }
    let project = reply.field(tool, "projectUuid")?;

    match archive_and_mirror(client, cli, root, &dir, slug, &project).await {
        Ok(mirrored) => Ok(Outcome::Archived { mirrored }),
        Err((step, error)) => {
            let content = format!("clawmux openspec archive {slug} failed at {step}:\n\n{error}");
            let comment = client
                .call_tool(
                    "chorus_add_comment",
                    json!({"targetType": "proposal", "targetUuid": proposal, "content": content}),
                )
                .await
                .map(|_| ());
            Err(ArchiveError::Failed {
                step,
                error,
                comment,
            })
        }
    }
}

type StepError = (String, String);

fn step<E: std::fmt::Display>(name: &str) -> impl FnOnce(E) -> StepError + '_ {
    move |e| (name.to_string(), e.to_string())
}

async fn archive_and_mirror(
    client: &ChorusClient,
    cli: &OpenSpecCli,
    root: &Path,
    dir: &Path,
    slug: &str,
    project: &str,
) -> Result<Vec<(String, String)>, StepError> {
    let mut caps = Vec::new();
    collect_specs(&dir.join("specs"), &mut Vec::new(), &mut caps)
        .map_err(step("reading the change"))?;
    caps.sort();
    let main = |cap: &str| root.join("openspec/specs").join(cap).join("spec.md");
    let before: Vec<Option<Vec<u8>>> = caps.iter().map(|c| std::fs::read(main(c)).ok()).collect();

    cli.run(root, ["archive", slug, "--yes"])
        .map_err(step("openspec archive"))?;

    let mut mirrored = Vec::new();
    for (cap, before) in caps.iter().zip(before) {
        let path = main(cap);
        let after = match read_exact(&path) {
            Ok(text) => text,
            // A capability whose last requirement was removed is retired.
            Err(MirrorError::Read { source, .. })
                if source.kind() == std::io::ErrorKind::NotFound =>
            {
                continue;
            }
            Err(e) => return Err(step("reading the archived spec")(e)),
        };
        if before.as_deref() == Some(after.as_bytes()) {
            continue;
        }
        let title = spec_title(cap);
        let what = format!("finding the Chorus spec document \"{title}\"");
        let uuid = find_document(client, project, "spec", &title)
            .await
            .map_err(step(&what))?
            .ok_or_else(|| {
                (
                    what.clone(),
                    format!("no spec document titled \"{title}\" in project {project}"),
                )
            })?;
        let tool = "chorus_pm_update_document";
        client
            .call_tool(tool, json!({"documentUuid": uuid, "content": after}))
            .await
            .map_err(step(tool))?;
        let server = document_content(client, &uuid)
            .await
            .map_err(step("reading the document back"))?;
        if !same_modulo_newline(&after, &server) {
            return Err((
                "confirming the mirror".into(),
                format!(
                    "document {uuid} differs from {} after the update",
                    path.display()
                ),
            ));
        }
        mirrored.push((cap.clone(), uuid));
    }
    Ok(mirrored)
}
