//! Pairing: an unknown sender gets a short code; the operator approves it
//! with `clawmux pairing approve CODE`. The daemon's core gives the codes
//! out ([`IssuedCodes`], in memory) and its shell keeps each new one in
//! `pairing.json` ([`Pairing::save_pending`]) and reads the approved
//! senders (`allowed.json`) before each chat input. The CLI's approve
//! writes only `allowed.json`: each file has one kind of writer, so
//! neither process can lose the other's change; and each file is read,
//! changed and written back under its lock, so two approvals at once (or
//! two daemons' saves) cannot lose one another's either. A code whose
//! sender is paired is used up (the daemon drops it when it next saves).

use std::collections::{BTreeMap, HashMap};
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

/// The codes the daemon gave out, in memory: a sender asking again while
/// its code is good gets the same one. Bounded by [`MAX_PENDING_CODES`]
/// (the oldest dropped). The file of pending codes is the shell's to write
/// ([`Pairing::save_pending`]); after a restart a sender may get a second
/// code, and either works.
#[derive(Debug, Default)]
pub struct IssuedCodes {
    by_sender: HashMap<String, PendingCode>,
}

#[derive(Debug)]
struct PendingCode {
    code: String,
    created_ms: u64,
}

impl IssuedCodes {
    /// `open_id`'s code at `now_ms`, and whether it is new (to be saved).
    pub fn issue(&mut self, open_id: &str, now_ms: u64) -> (String, bool) {
        (self.by_sender).retain(|_, p| now_ms.saturating_sub(p.created_ms) < PAIRING_CODE_TTL_MS);
        if let Some(p) = self.by_sender.get(open_id) {
            return (p.code.clone(), false);
        }
        while self.by_sender.len() >= MAX_PENDING_CODES {
            let oldest = (self.by_sender.iter())
                .min_by_key(|(_, p)| p.created_ms)
                .map(|(s, _)| s.clone());
            self.by_sender.remove(&oldest.unwrap_or_default());
        }
        let mut rng = rand::rng();
        let code: String = (0..CODE_LEN)
            .map(|_| CODE_ALPHABET[rng.random_range(0..CODE_ALPHABET.len())] as char)
            .collect();
        let pending = PendingCode {
            code: code.clone(),
            created_ms: now_ms,
        };
        self.by_sender.insert(open_id.to_owned(), pending);
        (code, true)
    }
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

    /// Keeps `code` for `pending`'s sender among the pending codes, with
    /// the expired ones dropped and the oldest past [`MAX_PENDING_CODES`].
    pub fn save_pending(&self, code: &str, pending: PendingPairing) -> Result<(), PairingError> {
        let _lock = self.pending.lock()?;
        let (mut codes, _) = self.pending.load::<BTreeMap<String, PendingPairing>>()?;
        let allowed = self.allowed()?;
        codes.retain(|_, p| {
            pending.created_ms.saturating_sub(p.created_ms) < PAIRING_CODE_TTL_MS
                && !allowed.contains(&p.open_id)
        });
        while codes.len() >= MAX_PENDING_CODES {
            let oldest = codes
                .iter()
                .min_by_key(|(_, p)| p.created_ms)
                .map(|(c, _)| c.clone());
            codes.remove(&oldest.unwrap_or_default());
        }
        codes.insert(code.to_owned(), pending);
        Ok(self.pending.save(&codes)?)
    }

    /// Approves a code: its sender may use the bot from now on. Only
    /// `allowed.json` is written (the daemon alone writes the pending
    /// codes, so neither process can lose the other's change): a code
    /// whose sender is paired is used up. Approvals run at once (each
    /// `clawmux pairing approve` a process) read and write the list in
    /// turn, under its lock: none is lost.
    pub fn approve(&self, code: &str) -> Result<String, PairingError> {
        let code = code.trim().to_ascii_uppercase();
        let _lock = self.allowed.lock()?;
        let mut allowed = self.allowed()?;
        let (mut pending, _) = self.pending.load::<BTreeMap<String, PendingPairing>>()?;
        let p = (pending.remove(&code))
            .filter(|p| !allowed.contains(&p.open_id))
            .filter(|p| clock::now_ms().saturating_sub(p.created_ms) < PAIRING_CODE_TTL_MS)
            .ok_or_else(|| PairingError::UnknownCode(code.clone()))?;
        allowed.push(p.open_id.clone());
        self.allowed.save(&allowed)?;
        Ok(p.open_id)
    }

    /// Pending codes of senders not paired yet, oldest first.
    pub fn pending(&self) -> Result<Vec<(String, PendingPairing)>, PairingError> {
        let (pending, _) = self.pending.load::<BTreeMap<String, PendingPairing>>()?;
        let allowed = self.allowed()?;
        let mut list: Vec<_> = (pending.into_iter())
            .filter(|(_, p)| !allowed.contains(&p.open_id))
            .collect();
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

    /// What the daemon does with a stranger's message: a code from memory,
    /// saved when new.
    fn request(p: &Pairing, issued: &mut IssuedCodes, open_id: &str) -> String {
        let now = clock::now_ms();
        let (code, new) = issued.issue(open_id, now);
        if new {
            let pending = PendingPairing {
                open_id: open_id.into(),
                created_ms: now,
            };
            p.save_pending(&code, pending).unwrap();
        }
        code
    }

    #[test]
    fn request_approve_allow() {
        let dir = tempfile::tempdir().unwrap();
        let p = Pairing::new(dir.path());
        let mut issued = IssuedCodes::default();
        let code = request(&p, &mut issued, "ou_1");
        assert_eq!(code.len(), CODE_LEN);
        assert_eq!(
            request(&p, &mut issued, "ou_1"),
            code,
            "same sender, same code"
        );
        assert_ne!(request(&p, &mut issued, "ou_2"), code);
        assert!(p.allowed().unwrap().is_empty());
        assert_eq!(p.approve(&code.to_lowercase()).unwrap(), "ou_1");
        assert_eq!(p.allowed().unwrap(), ["ou_1"]);
        assert!(
            matches!(p.approve(&code), Err(PairingError::UnknownCode(_))),
            "single use"
        );
        assert_eq!(p.pending().unwrap().len(), 1);
        // The approval wrote only allowed.json: the daemon's file still has
        // the code until the daemon next saves, which drops it.
        let file = || std::fs::read_to_string(dir.path().join("pairing.json")).unwrap();
        assert!(file().contains(&code), "{}", file());
        request(&p, &mut issued, "ou_3");
        assert!(!file().contains(&code), "{}", file());
    }

    #[test]
    fn pending_codes_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let p = Pairing::new(dir.path());
        let mut issued = IssuedCodes::default();
        for i in 0..MAX_PENDING_CODES + 10 {
            request(&p, &mut issued, &format!("ou_{i}"));
        }
        assert_eq!(p.pending().unwrap().len(), MAX_PENDING_CODES);
        assert_eq!(issued.by_sender.len(), MAX_PENDING_CODES);
    }
}
