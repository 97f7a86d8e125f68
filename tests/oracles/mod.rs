//! The official SDKs and CLIs as oracles: what they accept and produce,
//! clawmux must agree with.

mod feishu_sdk;
