//! tmux object ids: panes `%N`, windows `@N`, sessions `$N`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A string that is not a tmux id of the expected kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{got:?} is not a tmux id of the form {sigil}N")]
pub struct IdError {
    pub sigil: char,
    pub got: String,
}

/// Longest prefix of bad input quoted back in an [`IdError`], in characters:
/// enough to recognise it, short enough for one log line.
const ID_ERROR_QUOTE_CHARS: usize = 32;

macro_rules! tmux_id {
    ($(#[$doc:meta])* $name:ident, $sigil:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);

        impl $name {
            /// The character tmux writes before the number.
            pub const SIGIL: char = $sigil;
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}{}", $sigil, self.0)
            }
        }

        impl FromStr for $name {
            type Err = IdError;
            fn from_str(s: &str) -> Result<Self, IdError> {
                s.strip_prefix($sigil)
                    .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|d| d.parse().ok())
                    .map($name)
                    .ok_or_else(|| IdError {
                        sigil: $sigil,
                        got: s.chars().take(ID_ERROR_QUOTE_CHARS).collect(),
                    })
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

tmux_id!(
    /// A pane, written `%N` by tmux (`%0`, `%12`).
    PaneId,
    '%'
);
tmux_id!(
    /// A window, written `@N` by tmux.
    WindowId,
    '@'
);
tmux_id!(
    /// A session, written `$N` by tmux.
    SessionId,
    '$'
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pane_id_round_trips_through_text_and_json() {
        let id: PaneId = "%12".parse().unwrap();
        assert_eq!(id, PaneId(12));
        assert_eq!(id.to_string(), "%12");
        assert_eq!(serde_json::to_string(&id).unwrap(), "\"%12\"");
        assert_eq!(serde_json::from_str::<PaneId>("\"%12\"").unwrap(), id);
    }

    #[test]
    fn bad_ids_are_rejected() {
        for bad in ["", "%", "12", "@1", "%1x", "%-1", "%+1", "%99999999999"] {
            let err = bad.parse::<PaneId>().unwrap_err();
            assert_eq!(err.sigil, '%', "{bad}");
        }
        assert_eq!("$3".parse::<SessionId>().unwrap(), SessionId(3));
        assert_eq!("@7".parse::<WindowId>().unwrap().to_string(), "@7");
    }
}
