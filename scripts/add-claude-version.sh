#!/usr/bin/env bash
# Adds a Claude Code release to the tested matrix: installs it pinned under
# target/, records its screens (tests/fixtures/claude-VERSION/, one
# recording per scenario), runs the real-agent suite against it and the
# drift self-test. When all pass, make it NEWEST_TESTED in
# crates/agents/src/claude.rs (the one place naming the range) and commit the
# recordings; .ci/run then installs and tests it.
#
#   scripts/add-claude-version.sh 2.1.340
set -euo pipefail
cd "$(dirname "$0")/.."
release=${1:?usage: scripts/add-claude-version.sh VERSION}
case "$release" in
  *[!0-9.]* | "") echo "not a release number: $release" >&2; exit 2 ;;
esac
prefix="$PWD/target/claude-code-$release"
# Its postinstall links the platform package's native binary.
npm install --prefix "$prefix" --no-fund --no-audit "@anthropic-ai/claude-code@$release"
export CLAWMUX_CLAUDE="$prefix/node_modules/.bin/claude"
DISABLE_AUTOUPDATER=1 "$CLAWMUX_CLAUDE" --version
# Record the screens while the live scenarios run, then replay them.
CLAWMUX_UPDATE_FIXTURES=1 cargo test --test agents -- agent::live
cargo test --test agents -- agent::
cargo run --quiet -- doctor --agent
echo "Claude Code $release passes. Set NEWEST_TESTED = \"$release\" in crates/agents/src/claude.rs," \
  "add it to the README's tested releases, and commit tests/fixtures/claude-$release/."
