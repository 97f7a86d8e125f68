//! Feishu: the API client, both intakes and the `card`/`doctor` commands,
//! against a local Feishu-protocol server ([`crate::support::fake_feishu::FakeFeishu`]).

mod api;
mod cli;
mod fake_cardkit;
mod long_connection;
mod webhook;
