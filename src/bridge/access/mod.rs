//! Who may do what: the access policy (senders, approvers, rate limit)
//! and pairing of unknown senders. (The names and text chat users send
//! are validated below everything, in `bridge::names`.)

pub mod pairing;
pub mod policy;
