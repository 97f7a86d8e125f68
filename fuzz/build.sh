#!/bin/sh
# Build every fuzz target with libFuzzer's coverage flags (what cargo-fuzz does, minus the sanitizer).
cd "$(dirname "$0")" && RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
  -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
  -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks" \
  nice -n 19 cargo +nightly build --release --bins --target x86_64-unknown-linux-gnu "$@"
