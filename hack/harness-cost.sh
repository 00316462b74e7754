#!/usr/bin/env bash
# What the connection costs pgbench in local mode: runs a benchmark (default
# hack/harness-cost.yaml) through the servers' Unix sockets, then over TCP on the
# loopback (--tcp), and compares the two row by row with logbench compare.
# Usage: hack/harness-cost.sh [BENCHMARK.yaml]
set -euo pipefail
cd "$(dirname "$0")/.."
spec=${1:-hack/harness-cost.yaml}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/logbench" ./cmd/logbench
"$work/logbench" run --local -f "$spec" --save "$work/unix-socket.yaml" >/dev/null
"$work/logbench" run --local -f "$spec" --tcp --save "$work/tcp.yaml" >/dev/null
echo "BEFORE: Unix socket; AFTER: TCP on the loopback"
"$work/logbench" compare "$work/unix-socket.yaml" "$work/tcp.yaml"
