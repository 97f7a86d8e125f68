//! Feishu: the API client, both intakes and the `card`/`doctor` commands,
//! against a local Feishu-protocol server ([`fake_server::FakeFeishu`]).

pub mod fake_server;
pub mod signed;

mod api;
mod cli;
mod long_connection;
mod sdk_oracle;
mod webhook;
