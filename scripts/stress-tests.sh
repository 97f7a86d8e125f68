#!/usr/bin/env bash
# Runs the whole test suite ROUNDS times (default 4) while a busy loop holds
# a CPU and a writer keeps the disk busy (3 GB files in $TMPDIR, one at a
# time), the way a loaded CI machine with noisy neighbours is: races that an
# idle machine hides show up here. Prints each round's results; fails if any
# round fails. Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-4}"
cargo build --tests --quiet
scratch="$(mktemp -d -t clawmux-stress-disk.XXXXXX)"
# Each load runs in its own process group, so the trap stops its children
# (a dd mid-file) too.
hogs=()
trap 'for h in "${hogs[@]}"; do kill -- "-$h" 2>/dev/null || true; done; rm -rf "$scratch"' EXIT
setsid sh -c 'while :; do :; done' &
hogs+=($!)
setsid sh -c "while :; do dd if=/dev/zero of='$scratch/fill' bs=1M count=3000 2>/dev/null; rm -f '$scratch/fill'; done" &
hogs+=($!)
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
