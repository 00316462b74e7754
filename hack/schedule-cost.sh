#!/usr/bin/env bash
# What the interleaved schedule costs in wall time: times the quick sample with the
# logbench of the commit before the schedule (each destination's server up, its runs,
# down, one destination after the other) against this tree's (every server up first,
# rounds of shuffled destinations), both over TCP and without warm-ups, so that only
# the order and the servers' lifetimes differ. Pairs alternate which binary goes first.
# Usage: hack/schedule-cost.sh [PAIRS] (default 3)
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-3}
# The parent of the commit that introduced the schedule (schedule.Plan, then results.Plan).
before_commit=f17047f
work=$(mktemp -d)
trap 'git worktree remove --force "$work/before-tree" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

git worktree add --detach "$work/before-tree" "$before_commit" >/dev/null 2>&1
(cd "$work/before-tree" && go build -o "$work/before" ./cmd/logbench)
go build -o "$work/after" ./cmd/logbench
# The earlier logbench knows no warm-up: its spec has none, and this tree's turns it off.
grep -v '^ *warmup:' config/samples/quick.yaml >"$work/before.yaml"
sed 's/^\( *\)warmup:.*/\1warmup: 0s/' config/samples/quick.yaml >"$work/after.yaml"

# run NAME ARGS...: runs a benchmark and appends its wall time in seconds to NAME.times.
run() {
  local name=$1 start end
  shift
  start=$(date +%s.%N)
  "$@" >"$work/$name.log" 2>&1 || {
    cat "$work/$name.log"
    return 1
  }
  end=$(date +%s.%N)
  echo "$end - $start" | bc >>"$work/$name.times"
}
for ((pair = 1; pair <= pairs; pair++)); do
  if ((pair % 2)); then
    run before "$work/before" run --local -f "$work/before.yaml"
    run after "$work/after" run --local --tcp -f "$work/after.yaml"
  else
    run after "$work/after" run --local --tcp -f "$work/after.yaml"
    run before "$work/before" run --local -f "$work/before.yaml"
  fi
  printf 'pair %d: before %.1f s, after %.1f s\n' "$pair" "$(tail -n 1 "$work/before.times")" "$(tail -n 1 "$work/after.times")"
done

median() { sort -n "$1" | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
before=$(median "$work/before.times")
after=$(median "$work/after.times")
printf 'median wall time of %d pairs: before %.1f s, after %.1f s (%+.1f%%)\n' \
  "$pairs" "$before" "$after" "$(echo "($after - $before) / $before * 100" | bc -l)"
