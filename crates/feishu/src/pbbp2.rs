//! The long connection's binary frame (`pbbp2.Frame`, protobuf proto2), the
//! header keys it uses, and reassembly of events split into `sum > 1` frames.

use std::collections::HashMap;

use tokio::time::{Duration, Instant};

/// `method` of a control frame (ping/pong).
pub const METHOD_CONTROL: i32 = 0;
/// `method` of a data frame (event/card).
pub const METHOD_DATA: i32 = 1;

#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct Header {
    #[prost(string, required, tag = "1")]
    pub key: String,
    #[prost(string, required, tag = "2")]
    pub value: String,
}

#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct Frame {
    #[prost(uint64, required, tag = "1")]
    pub seq_id: u64,
    #[prost(uint64, required, tag = "2")]
    pub log_id: u64,
    #[prost(int32, required, tag = "3")]
    pub service: i32,
    #[prost(int32, required, tag = "4")]
    pub method: i32,
    #[prost(message, repeated, tag = "5")]
    pub headers: Vec<Header>,
    #[prost(string, optional, tag = "6")]
    pub payload_encoding: Option<String>,
    #[prost(string, optional, tag = "7")]
    pub payload_type: Option<String>,
    #[prost(bytes = "vec", optional, tag = "8")]
    pub payload: Option<Vec<u8>>,
    #[prost(string, optional, tag = "9")]
    pub log_id_new: Option<String>,
}

impl Frame {
    pub fn header(&self, key: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|h| h.key == key)
            .map(|h| h.value.as_str())
    }

    pub fn set_header(&mut self, key: &str, value: impl Into<String>) {
        let value = value.into();
        match self.headers.iter_mut().find(|h| h.key == key) {
            Some(h) => h.value = value,
            None => self.headers.push(Header {
                key: key.to_string(),
                value,
            }),
        }
    }

    /// A control frame (`type=ping` or `type=pong`) for `service`.
    pub fn control(kind: &str, service: i32) -> Frame {
        Frame {
            method: METHOD_CONTROL,
            service,
            headers: vec![Header {
                key: "type".into(),
                value: kind.into(),
            }],
            ..Frame::default()
        }
    }
}

/// Most events being reassembled at once: beyond this the oldest is dropped
/// (Feishu redelivers events it gets no ack for).
pub const MAX_PARTIAL_MESSAGES: usize = 64;
/// Largest reassembled event, in bytes; events are a few KB.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;
/// Most fragments one event may claim.
pub const MAX_FRAGMENTS: usize = 1024;
/// How long an incomplete event waits for its other fragments.
pub const FRAGMENT_TTL: Duration = Duration::from_secs(10);

struct Partial {
    parts: Vec<Option<Vec<u8>>>,
    bytes: usize,
    started: Instant,
}

/// Collects `sum > 1` fragments by `message_id` and `seq`.
#[derive(Default)]
pub struct Reassembler {
    partial: HashMap<String, Partial>,
}

/// Why a fragment was dropped.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum FragmentError {
    #[error("fragment header sum={sum} seq={seq} is out of range")]
    BadIndex { sum: usize, seq: usize },
    #[error("reassembled event larger than {MAX_MESSAGE_BYTES} bytes")]
    TooLarge,
}

impl Reassembler {
    /// Add a data frame's payload. Returns the whole payload once complete
    /// (immediately for `sum <= 1`).
    pub fn add(&mut self, frame: &Frame, now: Instant) -> Result<Option<Vec<u8>>, FragmentError> {
        let payload = frame.payload.clone().unwrap_or_default();
        let sum: usize = frame
            .header("sum")
            .and_then(|s| s.parse().ok())
            .unwrap_or(1);
        if sum <= 1 {
            return Ok(Some(payload));
        }
        let seq: usize = frame
            .header("seq")
            .and_then(|s| s.parse().ok())
            .unwrap_or(usize::MAX);
        if sum > MAX_FRAGMENTS || seq >= sum {
            return Err(FragmentError::BadIndex { sum, seq });
        }
        self.partial
            .retain(|_, p| now.duration_since(p.started) < FRAGMENT_TTL);
        let id = frame.header("message_id").unwrap_or_default().to_string();
        if !self.partial.contains_key(&id)
            && self.partial.len() >= MAX_PARTIAL_MESSAGES
            && let Some(oldest) = self
                .partial
                .iter()
                .min_by_key(|(_, p)| p.started)
                .map(|(k, _)| k.clone())
        {
            self.partial.remove(&oldest);
        }
        let entry = self.partial.entry(id.clone()).or_insert_with(|| Partial {
            parts: vec![None; sum],
            bytes: 0,
            started: now,
        });
        if entry.parts.len() != sum {
            return Err(FragmentError::BadIndex { sum, seq });
        }
        entry.bytes += payload.len();
        if entry.bytes > MAX_MESSAGE_BYTES {
            self.partial.remove(&id);
            return Err(FragmentError::TooLarge);
        }
        entry.parts[seq] = Some(payload);
        if entry.parts.iter().all(Option::is_some) {
            let done = self
                .partial
                .remove(&id)
                .map(|p| p.parts.into_iter().flatten().flatten().collect());
            return Ok(done);
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message as _;

    fn frag(id: &str, sum: usize, seq: usize, data: &[u8]) -> Frame {
        let mut f = Frame {
            method: METHOD_DATA,
            payload: Some(data.to_vec()),
            ..Frame::default()
        };
        f.set_header("message_id", id);
        f.set_header("sum", sum.to_string());
        f.set_header("seq", seq.to_string());
        f
    }

    #[test]
    fn frame_round_trips_through_protobuf() {
        let mut f = Frame::control("ping", 7);
        f.seq_id = 3;
        f.payload = Some(b"{}".to_vec());
        let bytes = f.encode_to_vec();
        assert_eq!(Frame::decode(bytes.as_slice()).unwrap(), f);
        // Field numbers as in pbbp2.proto: service=3 is varint tag 0x18.
        assert!(bytes.windows(2).any(|w| w == [0x18, 7]));
        assert!(Frame::decode(&b"\xff\xff"[..]).is_err());
    }

    #[test]
    fn fragments_reassemble_in_any_order() {
        let now = Instant::now();
        let mut r = Reassembler::default();
        assert_eq!(r.add(&frag("m", 3, 2, b"c"), now).unwrap(), None);
        assert_eq!(r.add(&frag("m", 3, 0, b"a"), now).unwrap(), None);
        assert_eq!(
            r.add(&frag("m", 3, 1, b"b"), now).unwrap(),
            Some(b"abc".to_vec())
        );
        assert_eq!(
            r.add(&frag("x", 1, 0, b"z"), now).unwrap(),
            Some(b"z".to_vec())
        );
        assert!(r.add(&frag("m", 3, 3, b"!"), now).is_err());
    }

    #[test]
    fn stale_fragments_expire() {
        let now = Instant::now();
        let mut r = Reassembler::default();
        r.add(&frag("m", 2, 0, b"a"), now).unwrap();
        let later = now + FRAGMENT_TTL + Duration::from_secs(1);
        // The old half is gone: the second half alone does not complete it.
        assert_eq!(r.add(&frag("m", 2, 1, b"b"), later).unwrap(), None);
    }
}
