#!/usr/bin/env bash
# The answer soak per agent: CLAWMUX_ANSWER_SOAK_TURNS (50) turns of
# randomly chunked answers through `serve --console` with the real CLIs
# (CLAWMUX_CODEX, CLAWMUX_AIDER, CLAWMUX_GEMINI, CLAWMUX_OPENCODE; a missing
# one is skipped). Prints one table row per agent for docs/BENCHMARKS.md.
# Not part of the default `cargo test`: minutes per agent.
# Usage: scripts/answer-soak.sh [codex|aider|gemini|opencode]...
set -euo pipefail
cd "$(dirname "$0")/.."
agents=("$@")
[ ${#agents[@]} -eq 0 ] && agents=(codex aider gemini opencode)
for agent in "${agents[@]}"; do
  nice cargo test --test tests "agent::soak::${agent}_answer_soak" -- --ignored --nocapture --test-threads=1
done
