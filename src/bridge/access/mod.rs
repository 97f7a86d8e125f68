//! Who may do what: the access policy (senders, approvers, rate limit),
//! pairing of unknown senders, and how often a refused sender is heard. (The names and text chat users send
//! are validated below everything, in `bridge::names`.)

pub mod pairing;
pub mod policy;
pub mod refusals;
