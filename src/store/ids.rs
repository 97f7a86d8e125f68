//! Newtypes for the identifiers the bridge hands around, so that a job's id
//! cannot be passed where an approval's is wanted. Each is a plain string
//! on the wire and on disk (`serde(transparent)`), and reads as a `&str`.

use serde::{Deserialize, Serialize};

macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// A new, unique one (a UUID).
            pub fn random() -> Self {
                $name(uuid::Uuid::new_v4().to_string())
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> Self {
                $name(s)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> Self {
                $name(s.to_owned())
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }
    };
}

string_id!(
    /// A chat command's id (a UUID), from the message to its result.
    JobId
);
string_id!(
    /// A prompt's id (a UUID), as its card's buttons name it.
    ApprovalId
);
string_id!(
    /// A project's name (checked by `bridge::access::names::validate_project`
    /// where it comes in from chat or configuration).
    ProjectName
);
string_id!(
    /// The handle of a card clawmux sent: stable across retries and
    /// restarts; the chat's own message id is looked up by it.
    CardHandle
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_plain_strings_on_disk_and_read_as_str() {
        let id = JobId::from("j-1");
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"j-1\"");
        assert_eq!(serde_json::from_str::<JobId>("\"j-1\"").unwrap(), id);
        assert!(id == "j-1" && id.starts_with("j-"));
        let mut map = std::collections::HashMap::new();
        map.insert(ApprovalId::from("a"), 1);
        assert_eq!(map.get("a"), Some(&1));
    }
}
