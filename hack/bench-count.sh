#!/usr/bin/env bash
# Times logbench's record counters against `grep -c TAG` on the same big log files,
# one file per format, and prints the median CPU time of each side and their ratio.
#
#   hack/bench-count.sh                 # generates ~200 MB per format under $DIR
#   SIZE=$((50<<20)) RUNS=3 hack/bench-count.sh
#   LOGBENCH=/path/to/logbench hack/bench-count.sh
#
# grep counts matching lines, logbench counts matching records (a stderr record spans
# several lines, a csvlog row may too), so the counts differ: only the times compare.
#
# Each side's start-up, timed on an empty file, is printed and also taken off in the
# last column: logbench's (Go runtime, Kubernetes client packages) is tens of ms of
# CPU against grep's 2 ms, which the raw ratio charges to the counters.
set -euo pipefail

cd "$(dirname "$0")/.."
DIR=${DIR:-/tmp/logbench-count}
SIZE=${SIZE:-$((200 << 20))}
RUNS=${RUNS:-5}
TAG=${TAG:-lbtag-bench}
FORMATS=${FORMATS:-"stderr csvlog jsonlog containerlog"}

mkdir -p "$DIR"
if [[ -z "${LOGBENCH:-}" ]]; then
  LOGBENCH=$DIR/logbench
  go build -o "$LOGBENCH" ./cmd/logbench
fi

# seconds runs a command and prints the CPU time (user + system) it took, which
# other work on a shared machine disturbs less than wall time. Its output goes to a
# file: GNU grep stops at the first match when it writes to /dev/null.
seconds() {
  local TIMEFORMAT='%3U %3S' times
  times=$({ time "$@" >"$DIR/output"; } 2>&1)
  echo "$times" | awk '{ print $1 + $2 }'
}

median() {
  sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# median_seconds prints the median CPU time of RUNS runs of a command.
median_seconds() {
  for ((run = 0; run < RUNS; run++)); do
    seconds "$@"
  done | median
}

: >"$DIR/empty.log"
grep_startup=$(median_seconds grep -c -- "$TAG" "$DIR/empty.log")
logbench_startup=$(median_seconds "$LOGBENCH" count --format csvlog --tag "$TAG" "$DIR/empty.log")
printf 'start-up on an empty file: grep %.3f s, logbench %.3f s\n' "$grep_startup" "$logbench_startup"

printf '%-13s %8s %12s %14s %10s %12s %14s %14s\n' format MB grep_lines logbench_recs grep_s logbench_s grep/logbench net_of_startup
for format in $FORMATS; do
  file=$DIR/$format.log
  if [[ ! -s $file ]] || (($(stat -c %s "$file") < SIZE)); then
    go run ./hack/genlogs -format "$format" -size "$SIZE" -tag "$TAG" >"$file"
  fi
  cat "$file" >/dev/null # both sides read from the page cache
  lines=$(grep -c -- "$TAG" "$file")
  records=$("$LOGBENCH" count --format "$format" --tag "$TAG" "$file")
  grep_times=() logbench_times=()
  for ((run = 0; run < RUNS; run++)); do
    grep_times+=("$(seconds grep -c -- "$TAG" "$file")")
    logbench_times+=("$(seconds "$LOGBENCH" count --format "$format" --tag "$TAG" "$file")")
  done
  grep_median=$(printf '%s\n' "${grep_times[@]}" | median)
  logbench_median=$(printf '%s\n' "${logbench_times[@]}" | median)
  printf '%-13s %8d %12d %14d %10.3f %12.3f %14.2f %14.2f\n' "$format" $(($(stat -c %s "$file") >> 20)) \
    "$lines" "$records" "$grep_median" "$logbench_median" "$(echo "scale=3; $grep_median / $logbench_median" | bc)" \
    "$(echo "scale=3; ($grep_median - $grep_startup) / ($logbench_median - $logbench_startup)" | bc)"
done
