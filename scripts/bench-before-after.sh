#!/usr/bin/env bash
# Every bench of docs/BENCHMARKS.md run twice in one sitting: on BASE (a git
# revision, e.g. the commit before a refactor) and on the working tree, each
# bench base-then-head back to back so both see the same machine load.
# Criterion benches compare with criterion's own statistics (the base run
# saved as baseline `before`, the head run measured against it: "change:
# [...]" and "No change / improved / regressed"); the other benches print
# their figures for both. Outputs land in target/bench-before-after/.
# Not part of CI (about an hour on 2 cores).
#
#   scripts/bench-before-after.sh BASE [bench…]
set -euo pipefail
cd "$(dirname "$0")/.."
base="${1:?usage: scripts/bench-before-after.sh BASE [bench…]}"
shift
benches=("$@")
if [ ${#benches[@]} -eq 0 ]; then
  benches=(decode matcher paginate hook_latency latency streaming outbox_fairness bridge_latency load)
fi
head_dir="$PWD"
out="$head_dir/target/bench-before-after"
# Outside this checkout: cargo would take a tree under it for a member of
# this workspace.
base_dir="${TMPDIR:-/tmp}/clawmux-bench-base"
mkdir -p "$out"
if [ ! -d "$base_dir" ]; then
  git worktree add --force --detach "$base_dir" "$base" >/dev/null
else
  git -C "$base_dir" checkout --quiet --detach "$base"
fi
export CRITERION_HOME="$out/criterion"
# A target directory per tree: cargo keys a workspace's own crates by their
# path in the workspace, not on disk, so the two trees' crates would take
# each other's builds in one directory (the head's crates linked against the
# base's `clawmux-i18n`).
export CARGO_TARGET_DIR="$head_dir/target"
base_target="$out/base-target"
echo "base $(git -C "$base_dir" log --oneline -1)"
echo "head $(git log --oneline -1)$(git diff --quiet || echo ' (with uncommitted changes)')"
(cd "$base_dir" && CARGO_TARGET_DIR="$base_target" cargo bench --no-run --quiet)
cargo bench --no-run --quiet

# The load bench was `clawmux bench` before it became the clawmux-bench
# program. CLAWMUX_LOAD_QUICK=1 runs its short form (about 2 minutes instead
# of 8).
load() {
  local quick=()
  [ "${CLAWMUX_LOAD_QUICK:-}" = 1 ] && quick=(--quick)
  if [ -f crates/bench/Cargo.toml ]; then
    cargo run --quiet --release -p clawmux-bench -- "${quick[@]}"
  else
    cargo run --quiet --release -- bench "${quick[@]}"
  fi
}

for bench in "${benches[@]}"; do
  for side in base head; do
    dir="$head_dir"
    target="$CARGO_TARGET_DIR"
    [ "$side" = base ] && dir="$base_dir" && target="$base_target"
    log="$out/$bench.$side.txt"
    echo "== $bench ($side)"
    case "$bench" in
      decode | matcher | paginate | hook_latency)
        # Lenient: a bench function the base does not have is measured alone.
        if [ "$side" = base ]; then flag=(--save-baseline before); else flag=(--baseline-lenient before); fi
        (cd "$dir" && export CARGO_TARGET_DIR="$target" && cargo bench --quiet --bench "$bench" -- --noplot "${flag[@]}") >"$log" 2>&1 || echo "$bench ($side) failed: $log" ;;
      load)
        (cd "$dir" && export CARGO_TARGET_DIR="$target" && load) >"$log" 2>&1 || echo "$bench ($side) failed: $log" ;;
      bridge_latency)
        (cd "$dir" && export CARGO_TARGET_DIR="$target" && cargo test --quiet --release --test tests bridge::latency -- --ignored --nocapture) >"$log" 2>&1 || echo "$bench ($side) failed: $log" ;;
      *)
        (cd "$dir" && export CARGO_TARGET_DIR="$target" && cargo bench --quiet --bench "$bench") >"$log" 2>&1 || echo "$bench ($side) failed: $log" ;;
    esac
    grep -E "time:|thrpt:|change:|regressed|improved|No change|p50|p99|median|ratio|x\)|MB|ms" "$log" | head -40 || true
  done
done
echo "logs: $out"
