//! Pairing: an unknown sender gets a short code; the operator approves it
//! with `clawmux pairing approve CODE`. The daemon writes the pending codes
//! (`pairing.json`) and only reads the approved senders (`allowed.json`),
//! which only the CLI writes, so the two processes never write one file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::store::{StateError, StateFile, clock};

/// A code is good for an hour: long enough to reach the operator.
pub const PAIRING_CODE_TTL_MS: u64 = 3_600_000;
/// Pending codes kept at most (oldest dropped): bounds what strangers can
/// make the daemon store.
pub const MAX_PENDING_CODES: usize = 256;
/// No 0/O or 1/I/L: codes are read aloud and retyped.
const CODE_ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";
const CODE_LEN: usize = 8;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingPairing {
    pub open_id: String,
    pub created_ms: u64,
}

#[derive(Debug, thiserror::Error)]
pub enum PairingError {
    #[error(
        "no pending pairing code `{0}` (codes expire after an hour; `clawmux pairing list` shows pending ones)"
    )]
    UnknownCode(String),
    #[error(transparent)]
    State(#[from] StateError),
}

/// The pairing files in a state directory.
pub struct Pairing {
    pending: StateFile,
    allowed: StateFile,
}

impl Pairing {
    pub fn new(dir: &Path) -> Pairing {
        Pairing {
            pending: StateFile::new(dir.join("pairing.json")),
            allowed: StateFile::new(dir.join("allowed.json")),
        }
    }

    /// The code for `open_id`: the pending one if any, else a new one.
    pub fn request(&self, open_id: &str) -> Result<String, PairingError> {
        let now = clock::now_ms();
        let (mut pending, _) = self.pending.load::<BTreeMap<String, PendingPairing>>()?;
        pending.retain(|_, p| now.saturating_sub(p.created_ms) < PAIRING_CODE_TTL_MS);
        if let Some((code, _)) = pending.iter().find(|(_, p)| p.open_id == open_id) {
            return Ok(code.clone());
        }
        while pending.len() >= MAX_PENDING_CODES {
            let oldest = pending
                .iter()
                .min_by_key(|(_, p)| p.created_ms)
                .map(|(c, _)| c.clone());
            pending.remove(&oldest.unwrap_or_default());
        }
        let mut rng = rand::rng();
        let code: String = (0..CODE_LEN)
            .map(|_| CODE_ALPHABET[rng.random_range(0..CODE_ALPHABET.len())] as char)
            .collect();
        pending.insert(
            code.clone(),
            PendingPairing {
                open_id: open_id.into(),
                created_ms: now,
            },
        );
        self.pending.save(&pending)?;
        Ok(code)
    }

    /// Approves a code: its sender may use the bot from now on.
    pub fn approve(&self, code: &str) -> Result<String, PairingError> {
        let code = code.trim().to_ascii_uppercase();
        let (mut pending, _) = self.pending.load::<BTreeMap<String, PendingPairing>>()?;
        let p = pending
            .remove(&code)
            .filter(|p| clock::now_ms().saturating_sub(p.created_ms) < PAIRING_CODE_TTL_MS)
            .ok_or_else(|| PairingError::UnknownCode(code.clone()))?;
        let mut allowed = self.allowed()?;
        if !allowed.contains(&p.open_id) {
            allowed.push(p.open_id.clone());
        }
        self.allowed.save(&allowed)?;
        self.pending.save(&pending)?;
        Ok(p.open_id)
    }

    /// Pending codes, oldest first.
    pub fn pending(&self) -> Result<Vec<(String, PendingPairing)>, PairingError> {
        let (pending, _) = self.pending.load::<BTreeMap<String, PendingPairing>>()?;
        let mut list: Vec<_> = pending.into_iter().collect();
        list.sort_by_key(|(_, p)| p.created_ms);
        Ok(list)
    }

    /// Senders approved by pairing.
    pub fn allowed(&self) -> Result<Vec<String>, PairingError> {
        Ok(self.allowed.load::<Vec<String>>()?.0)
    }

    pub fn allowed_path(&self) -> PathBuf {
        self.allowed.path().to_path_buf()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_approve_allow() {
        let dir = tempfile::tempdir().unwrap();
        let p = Pairing::new(dir.path());
        let code = p.request("ou_1").unwrap();
        assert_eq!(code.len(), CODE_LEN);
        assert_eq!(p.request("ou_1").unwrap(), code, "same sender, same code");
        assert_ne!(p.request("ou_2").unwrap(), code);
        assert!(p.allowed().unwrap().is_empty());
        assert_eq!(p.approve(&code.to_lowercase()).unwrap(), "ou_1");
        assert_eq!(p.allowed().unwrap(), ["ou_1"]);
        assert!(
            matches!(p.approve(&code), Err(PairingError::UnknownCode(_))),
            "single use"
        );
        assert_eq!(p.pending().unwrap().len(), 1);
    }

    #[test]
    fn pending_codes_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let p = Pairing::new(dir.path());
        for i in 0..MAX_PENDING_CODES + 10 {
            p.request(&format!("ou_{i}")).unwrap();
        }
        assert_eq!(p.pending().unwrap().len(), MAX_PENDING_CODES);
    }
}
