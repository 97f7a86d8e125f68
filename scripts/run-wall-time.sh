#!/usr/bin/env bash
# `clawmux run`'s wall time with the simulated agent on a private tmux
# server and state directory: a first run that creates the project, then N
# messages and N `/gsd:status` looks, each its own process. With --serve,
# every run goes through a `serve --console` started first. Prints the
# first run's time and the medians (ms). Not part of CI.
#
#   scripts/run-wall-time.sh [--serve] BINARY [N]
set -euo pipefail
serve=0
[ "${1:-}" = --serve ] && serve=1 && shift
bin="${1:?usage: scripts/run-wall-time.sh [--serve] BINARY [N]}"
n="${2:-10}"
home=$(mktemp -d)
sock="clawmux-wall-$$"
printf 'workspace_root = "%s/ws"\n[tmux]\nsocket = "%s"\n' "$home" "$sock" >"$home/config.toml"
export CLAWMUX_HOME="$home" LANG=C.UTF-8
cleanup() {
  exec 3>&- 2>/dev/null || true
  [ -n "${spid:-}" ] && wait "$spid" 2>/dev/null || true
  tmux -L "$sock" kill-server 2>/dev/null || true
  rm -rf "$home"
}
trap cleanup EXIT
if [ "$serve" = 1 ]; then
  mkfifo "$home/in"
  "$bin" serve --console --agent sim <"$home/in" >"$home/serve.out" 2>&1 &
  spid=$!
  exec 3>"$home/in"
  for _ in $(seq 100); do [ -S "$home/run.sock" ] && break; sleep 0.1; done
fi
ms() {
  local s e
  s=$(date +%s%N)
  "$bin" run --project shop --agent sim "$@" >/dev/null 2>&1
  e=$(date +%s%N)
  echo $(((e - s) / 1000000))
}
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
first=$(ms -- hello)
messages=()
looks=()
for i in $(seq "$n"); do
  messages+=("$(ms -- "hello $i")")
  looks+=("$(ms -- /gsd:status)")
done
echo "first ${first} ms; message median $(median "${messages[@]}") ms [${messages[*]}]; look median $(median "${looks[@]}") ms [${looks[*]}]"
