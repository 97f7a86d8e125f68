#!/usr/bin/env bash
# One hour (CLAWMUX_SOAK_SECS) of five simulated projects doing commands with
# approvals against the local Feishu server; fails if a command misses a card
# or the daemon's memory grows. Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
export CLAWMUX_SOAK_SECS="${CLAWMUX_SOAK_SECS:-3600}"
exec cargo test --release --test tests bridge::soak -- --ignored --nocapture
