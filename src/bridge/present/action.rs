//! What a button or menu on a bridge card does when clicked: the callback
//! value written on the card, and its reading when the click comes back.
//! One tagged enum for both directions, so a builder cannot write a value
//! that the click handling does not know.
//!
//! Wire format (unchanged since the first release, so cards sent before an
//! upgrade still work): a JSON object whose `action` names the variant in
//! snake_case, with the variant's fields beside it, e.g.
//! `{"action":"approval","approval_id":"…","project":"…","session":"…","option":"1"}`
//! or `{"action":"projects"}`. A select menu's chosen option is not in the
//! value: Feishu sends it as the click's `action.option`.

use crate::store::state::{ApprovalId, JobId, ProjectName, SessionName};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Largest callback value read, in bytes of its JSON: ours are a few
/// hundred bytes (ids and names are validated short); anything bigger is
/// not ours and is refused before it is copied around.
pub const MAX_ACTION_VALUE_BYTES: usize = 4 * 1024;

/// A button's or menu's action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum CardAction {
    /// Answer an approval with one of its options.
    Approval(ApprovalChoice),
    /// The projects menu: the chosen project is the click's option.
    SelectProject,
    /// Run the built-in `/gsd:projects`.
    Projects,
    /// Run the built-in `/gsd:help`.
    Help,
    /// Run the built-in `/gsd:status`.
    Status,
    /// Send a command to a project's agent: the one it suggested when it
    /// refused another (`Did you mean /gsd-plan-phase?`).
    Command(CommandChoice),
    /// Interrupt `project`'s running command `job` (the progress card's
    /// button): the agent's interrupt key, for approvers.
    Interrupt(InterruptChoice),
}

/// Interrupt command `job` of `project`; a click after it ended is stale.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterruptChoice {
    pub project: ProjectName,
    pub job: JobId,
}

/// Type `command` into `project`'s agent, as if its chat had sent it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandChoice {
    pub project: ProjectName,
    pub command: String,
}

/// Answer approval `approval_id` of `project`/`session` with the option
/// whose key is `option` (what gets typed into the pane). The project and
/// session let a stale or forged click be told from a real one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalChoice {
    pub approval_id: ApprovalId,
    pub project: ProjectName,
    pub session: SessionName,
    pub option: String,
}

/// Why a click's value is not one of ours.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CardActionError {
    #[error("card action value is {0} bytes, more than {MAX_ACTION_VALUE_BYTES}")]
    TooLarge(usize),
    #[error("card action value has no \"action\" name")]
    Unnamed,
    #[error("unknown card action {0:?}")]
    Unknown(String),
    #[error("card action {action:?} is malformed: {reason}")]
    Malformed { action: String, reason: String },
}

impl CardAction {
    /// The callback value to put on a button or menu.
    pub fn to_value(&self) -> Value {
        // Serializing a plain enum of strings cannot fail.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The action a click carries, or why it is not one of ours (a forged
    /// or stale value: refused, never guessed at).
    pub fn from_value(value: &Value) -> Result<CardAction, CardActionError> {
        let size = value.to_string().len();
        if size > MAX_ACTION_VALUE_BYTES {
            return Err(CardActionError::TooLarge(size));
        }
        let name = Self::name_of(value).ok_or(CardActionError::Unnamed)?;
        if !Self::NAMES.contains(&name) {
            return Err(CardActionError::Unknown(name.to_string()));
        }
        CardAction::deserialize(value).map_err(|e| CardActionError::Malformed {
            action: name.to_string(),
            reason: e.to_string(),
        })
    }

    /// The `action` name a value carries, whatever the rest (for logs).
    pub fn name_of(value: &Value) -> Option<&str> {
        value.get("action").and_then(Value::as_str)
    }

    /// Every action name, as written on the wire.
    const NAMES: [&'static str; 7] = [
        "approval",
        "select_project",
        "projects",
        "help",
        "status",
        "command",
        "interrupt",
    ];
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn approval() -> CardAction {
        CardAction::Approval(ApprovalChoice {
            approval_id: "a1".parse().unwrap(),
            project: crate::store::ids::project("web"),
            session: crate::store::ids::session("s1"),
            option: "1".into(),
        })
    }

    #[test]
    fn every_action_round_trips() {
        for a in [
            approval(),
            CardAction::SelectProject,
            CardAction::Projects,
            CardAction::Help,
            CardAction::Status,
            CardAction::Command(CommandChoice {
                project: crate::store::ids::project("web"),
                command: "/gsd-plan-phase 2".into(),
            }),
            CardAction::Interrupt(InterruptChoice {
                project: crate::store::ids::project("web"),
                job: "j1".parse().unwrap(),
            }),
        ] {
            let v = a.to_value();
            let name = CardAction::name_of(&v).unwrap();
            assert!(CardAction::NAMES.contains(&name), "{name}");
            assert_eq!(CardAction::from_value(&v), Ok(a));
        }
    }

    /// A forged click naming no project (`../x`, a shell word, upper case)
    /// is malformed: the name is parsed as the value is read.
    #[test]
    fn a_click_naming_no_project_is_refused() {
        for bad in ["../etc", "Web", "a;b", "", "$(id)"] {
            let v = json!({"action": "interrupt", "project": bad, "job": "j1"});
            let err = CardAction::from_value(&v).unwrap_err();
            assert!(
                matches!(&err, CardActionError::Malformed { reason, .. } if reason.contains("project name")),
                "{bad:?}: {err}"
            );
        }
    }

    /// Values exactly as cards sent before the enum existed carry them.
    #[test]
    fn values_on_old_cards_still_parse() {
        let old = json!({"action": "approval", "approval_id": "a1", "project": "web", "session": "s1", "option": "1"});
        assert_eq!(CardAction::from_value(&old), Ok(approval()));
        assert_eq!(approval().to_value(), old);
        for (name, action) in [
            ("select_project", CardAction::SelectProject),
            ("projects", CardAction::Projects),
            ("help", CardAction::Help),
            ("status", CardAction::Status),
        ] {
            let old = json!({ "action": name });
            assert_eq!(CardAction::from_value(&old), Ok(action.clone()));
            assert_eq!(action.to_value(), old);
        }
    }

    #[test]
    fn forged_values_are_refused() {
        assert_eq!(
            CardAction::from_value(&json!({"action": "rm -rf"})),
            Err(CardActionError::Unknown("rm -rf".into()))
        );
        assert_eq!(
            CardAction::from_value(&json!({"k": 1})),
            Err(CardActionError::Unnamed)
        );
        assert_eq!(
            CardAction::from_value(&json!("approval")),
            Err(CardActionError::Unnamed)
        );
        assert_eq!(
            CardAction::from_value(&json!({"action": 7})),
            Err(CardActionError::Unnamed)
        );
        // Our name, but not our fields.
        for forged in [
            json!({"action": "approval", "approval_id": "a1", "option": "1"}),
            json!({"action": "approval", "approval_id": 1, "project": "web", "session": "s1", "option": "1"}),
            // A session named in tmux's target syntax is not one of ours.
            json!({"action": "approval", "approval_id": "a1", "project": "web", "session": "{marked}", "option": "1"}),
        ] {
            assert!(
                matches!(
                    CardAction::from_value(&forged),
                    Err(CardActionError::Malformed { ref action, .. }) if action == "approval"
                ),
                "{forged}"
            );
        }
        let huge = json!({"action": "approval", "approval_id": "x".repeat(MAX_ACTION_VALUE_BYTES),
            "project": "web", "session": "s1", "option": "1"});
        assert!(matches!(
            CardAction::from_value(&huge),
            Err(CardActionError::TooLarge(_))
        ));
    }
}
