#!/usr/bin/env bash
# Runs the whole test suite ROUNDS times (default 4) while two busy loops
# hold the CPUs, the way a loaded CI machine does: races that an idle
# machine hides show up here. Prints each round's results; fails if any
# round fails. Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-4}"
cargo build --tests --quiet
hogs=()
trap 'kill "${hogs[@]}" 2>/dev/null || true' EXIT
for _ in 1 2; do
  sh -c 'while :; do :; done' &
  hogs+=($!)
done
failed=0
for round in $(seq "$rounds"); do
  log="$(mktemp -t clawmux-stress.XXXXXX)"
  if cargo test --quiet >"$log" 2>&1; then
    echo "round $round: ok"
    rm -f "$log"
  else
    failed=1
    echo "round $round: FAILED (log: $log)"
    grep -E "panicked at|^test .* FAILED" "$log" || true
  fi
done
exit "$failed"
