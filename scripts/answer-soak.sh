#!/usr/bin/env bash
# The answer soak per agent: CLAWMUX_ANSWER_SOAK_TURNS (50) turns of
# randomly chunked answers through `serve --console` with the real CLIs
# (CLAWMUX_CLAUDE, CLAWMUX_CODEX, CLAWMUX_AIDER, CLAWMUX_GEMINI,
# CLAWMUX_OPENCODE; a missing one is skipped). `claude-old` runs Claude
# Code's soak on CLAWMUX_CLAUDE_OLD (the oldest supported release) instead
# of CLAWMUX_CLAUDE. Prints one table row per agent for docs/BENCHMARKS.md.
# Not part of the default `cargo test`: minutes per agent, one at a time.
# Usage: scripts/answer-soak.sh [claude|claude-old|codex|aider|gemini|opencode]...
set -euo pipefail
cd "$(dirname "$0")/.."
agents=("$@")
[ ${#agents[@]} -eq 0 ] && agents=(claude claude-old codex aider gemini opencode)
soak() {
  nice cargo test --test agents "agent::soak::${1}_answer_soak" -- --ignored --nocapture --test-threads=1
}
for agent in "${agents[@]}"; do
  case "$agent" in
    claude-old)
      if [ -n "${CLAWMUX_CLAUDE_OLD:-}" ]; then
        CLAWMUX_CLAUDE="$CLAWMUX_CLAUDE_OLD" soak claude
      else
        echo "skipped claude-old: CLAWMUX_CLAUDE_OLD is not set" >&2
      fi
      ;;
    *) soak "$agent" ;;
  esac
done
