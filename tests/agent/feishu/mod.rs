//! `clawmux serve` (the real binary) on the Feishu channel, pointed at the
//! local Feishu server on 127.0.0.1, driving the real Claude Code in the
//! daemon's own tmux server against the fake Messages API. Chat messages
//! arrive as `im.message.receive_v1` events and button clicks as
//! `card.action.trigger` events, over the long connection (`type=event`
//! frames, as Feishu sends them) or POSTed to the daemon's webhook; the
//! cards are the REST calls the local Feishu records.

mod dialogs;
mod gsd;
mod harness;
mod replies;
mod turns;
