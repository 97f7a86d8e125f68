//! The per-project secret that proves a hook event comes from that
//! project's agent: any process of the daemon's user can write to the hook
//! socket and claim a pane, but only the agent clawmux started has the
//! project's token in its environment ([`TOKEN_ENV`]).
//!
//! Tokens are derived from one random key kept in the state directory
//! (`hook.key`, 0600), so they survive a daemon restart and are never
//! stored per project: `token = hex(sha256(key ‖ 0 ‖ project))`, cut to
//! [`TOKEN_HEX_CHARS`].

use std::io::{Read, Write};
use std::path::Path;

use sha2::{Digest, Sha256};

/// The environment variable the agent's pane gets its token in; `clawmux
/// hook` (run by the agent) puts it on each event.
pub const TOKEN_ENV: &str = "CLAWMUX_HOOK_TOKEN";

/// Length of a token: 128 bits in hex.
pub const TOKEN_HEX_CHARS: usize = 32;

/// The key file in the state directory.
const KEY_FILE: &str = "hook.key";

const KEY_BYTES: usize = 32;

/// The key tokens are derived from.
#[derive(Clone)]
pub struct HookKey([u8; KEY_BYTES]);

impl HookKey {
    /// The key in `state_dir`, made on first use. When it cannot be read
    /// or written the key lives in memory only: hooks still verify, but
    /// sessions made before a restart no longer do (logged).
    pub fn load_or_create(state_dir: &Path) -> HookKey {
        let path = state_dir.join(KEY_FILE);
        let mut key = [0u8; KEY_BYTES];
        if let Ok(mut file) = std::fs::File::open(&path)
            && file.read_exact(&mut key).is_ok()
        {
            return HookKey(key);
        }
        rand::fill(&mut key);
        let saved = clawmux_store::private::create(&path).and_then(|mut f| f.write_all(&key));
        if let Err(e) = saved {
            tracing::warn!(path = %path.display(), error = %e, "hook key not saved; hooks of sessions made before a restart will be ignored");
        }
        HookKey(key)
    }

    /// The token of `project`.
    pub fn token(&self, project: &str) -> String {
        let mut hash = Sha256::new();
        hash.update(self.0);
        hash.update([0]);
        hash.update(project.as_bytes());
        let mut hex = hex::encode(hash.finalize());
        hex.truncate(TOKEN_HEX_CHARS);
        hex
    }

    /// Whether `given` is `project`'s token (compared in constant time).
    pub fn verifies(&self, project: &str, given: Option<&str>) -> bool {
        use subtle::ConstantTimeEq;
        given.is_some_and(|g| bool::from(g.as_bytes().ct_eq(self.token(project).as_bytes())))
    }
}

/// A token as `clawmux hook` may pass it on: hex of the right length, or
/// nothing (a forged or garbled variable is dropped, not forwarded).
pub fn clean(token: Option<&str>) -> Option<&str> {
    token.filter(|t| t.len() == TOKEN_HEX_CHARS && t.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_per_project_and_survive_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let key = HookKey::load_or_create(dir.path());
        let (shop, blog) = (key.token("shop"), key.token("blog"));
        assert_ne!(shop, blog);
        assert_eq!(clean(Some(&shop)), Some(shop.as_str()));
        assert!(key.verifies("shop", Some(&shop)));
        assert!(!key.verifies("shop", Some(&blog)));
        assert!(!key.verifies("shop", None));
        let again = HookKey::load_or_create(dir.path());
        assert_eq!(again.token("shop"), shop);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn only_well_formed_tokens_are_passed_on() {
        assert_eq!(clean(Some("abc")), None);
        assert_eq!(clean(Some(&"g".repeat(TOKEN_HEX_CHARS))), None);
        assert_eq!(clean(None), None);
    }
}
