//! Who may do what: the access policy (senders, approvers, rate limit),
//! pairing of unknown senders, and validation of the names and text chat
//! users send.

pub mod names;
pub mod pairing;
pub mod policy;
