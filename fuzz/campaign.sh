#!/bin/sh
# Run one fuzz target for $SECS seconds (default 600; nice, one process),
# then minimise its corpus into corpus/TARGET.min.
# usage: ./campaign.sh TARGET [seed dirs...] -- [extra libFuzzer flags]
# Logs: runs/TARGET.log (fuzzing, final stats) and runs/TARGET.merge.log.
set -u
cd "$(dirname "$0")"
t=$1; shift
seeds=""; while [ $# -gt 0 ] && [ "$1" != "--" ]; do seeds="$seeds $1"; shift; done
[ $# -gt 0 ] && shift
mkdir -p runs corpus/$t artifacts/$t
# A copy, so a rebuild does not replace the binary under the fuzzer.
cp target/x86_64-unknown-linux-gnu/release/$t runs/$t.bin
nice -n 19 runs/$t.bin corpus/$t $seeds -max_total_time=${SECS:-600} \
  -artifact_prefix=artifacts/$t/ -print_final_stats=1 "$@" > runs/$t.log 2>&1
echo "rc=$?" >> runs/$t.log
rm -rf corpus/$t.min && mkdir corpus/$t.min
nice -n 19 runs/$t.bin -merge=1 corpus/$t.min corpus/$t "$@" > runs/$t.merge.log 2>&1
echo "min: $(ls corpus/$t.min | wc -l) files, $(du -sb corpus/$t.min | cut -f1) bytes" >> runs/$t.merge.log
