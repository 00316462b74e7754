#!/usr/bin/env bash
# What a benchmark in a cluster costs beyond its runs: applies hack/bench-wall.yaml (or
# BENCHMARK.yaml) on the cluster of KUBECONFIG (default: the local cluster's) in the
# namespace its operator watches (the e2e suite's, with a Loki of its own), REPEATS
# times, each after deleting the last, and prints for each its wall time from kubectl
# apply to the Complete condition, the time the runs need (pgbench, warm-ups and the
# drains' time to the last record, from the runs' records), their ratio, and the mean and
# median per-run overhead from when each run was assigned to its runner and when its
# record appeared (both seen by watching): the runner's time beyond warm-up, pgbench and
# drain (picking the run up, connecting, the drain's wait past the last record, the
# final recount, writing the record), and record written -> next run assigned (the
# operator's pass); then each run in the order they ran, with its drain and its runner's
# time beyond warm-up, pgbench and drain.
# Usage: hack/bench-wall.sh [REPEATS] [BENCHMARK.yaml]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$REPO_ROOT"
repeats=${1:-1}
spec=${2:-hack/bench-wall.yaml}
export KUBECONFIG=${KUBECONFIG:-$PWD/bin/local-cluster/kubeconfig}
namespace=${BENCH_NAMESPACE:-logbench-e2e}
postgres_image=${POSTGRES_IMAGE:-${IMAGE_REGISTRY}/postgresql:15-pgaudit-counter-bookworm}
fluent_bit_image=${FLUENT_BIT_IMAGE:-${IMAGE_REGISTRY}/fluent-bit:${FLUENT_BIT_VERSION}}
loki_image=${LOKI_IMAGE:-${IMAGE_REGISTRY}/loki:${LOKI_VERSION}}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The e2e suite's Loki, renamed so that its specs, which restart and delete theirs, leave
# this one alone.
loki=bench-wall-loki
sed -E -e "s#@LOKI_IMAGE@#${loki_image}#" -e "s#(name|app.kubernetes.io/name): loki\$#\1: ${loki}#" \
  test/e2e/testdata/loki.yaml | kubectl -n "$namespace" apply -f - >/dev/null
kubectl -n "$namespace" rollout status "deployment/$loki" --timeout=5m >/dev/null
sed -e "s#@POSTGRES_IMAGE@#${postgres_image}#" -e "s#@FLUENT_BIT_IMAGE@#${fluent_bit_image}#" \
  -e "s#@NAMESPACE@#${namespace}#" "$spec" >"$work/benchmark.yaml"
name=$(kubectl create --dry-run=client -o jsonpath='{.metadata.name}' -f "$work/benchmark.yaml")

# report BENCHMARK.json ASSIGNED.json RECORDED.json APPLIED COMPLETED prints one
# benchmark's figures; ASSIGNED and RECORDED map destination/clients/repeat to when the
# run was assigned and when its record appeared, BENCHMARK.json holds each row's repeats.
report() {
  jq -r --argjson applied "$4" --argjson completed "$5" --slurpfile assigned "$2" --slurpfile recorded "$3" '
    def dur: capture("^((?<m>[0-9]+)m)?((?<s>[0-9]+)s)?$") | ((.m // "0" | tonumber) * 60 + (.s // "0" | tonumber));
    def median: sort | if length == 0 then 0 elif length % 2 == 1 then .[length / 2 | floor]
      else (.[length / 2 - 1] + .[length / 2]) / 2 end;
    .spec.workload as $w | ($w.duration | dur) as $pgbench | (($w.warmup // "5s") | dur) as $warmup
    | ([.status.results[] | .destination as $d | .clients as $c | .repeats[]
       | "\($d)/\($c)/\(.repeat)" as $key
       | {key: $key, drain: .drainSeconds, warmup: (if .repeat == 1 then $warmup else 0 end),
          assigned: $assigned[0][$key], recorded: $recorded[0][$key]}] | sort_by(.recorded)) as $runs
    | ($runs | map($pgbench + .warmup + .drain) | add) as $needed
    | ($completed - $applied) as $wall
    | ($runs | map(.assigned) | min) as $first
    | [range(0; $runs | length) as $i | $runs[$i]
       | {runner: ((.recorded - .assigned) - ($pgbench + .warmup + .drain)),
          operator: ((if $i + 1 < ($runs | length) then $runs[$i + 1].assigned else $completed end) - .recorded)}] as $o
    | "wall time (apply -> Complete): \($wall * 10 | round / 10) s; clusters (apply -> first run assigned): \(($first - $applied) | round) s",
      "runs: \($runs | length); pgbench \($pgbench * ($runs | length)) s + warm-ups \($runs | map(.warmup) | add) s + drains \($runs | map(.drain) | add * 10 | round / 10) s = \($needed * 10 | round / 10) s",
      "ratio wall / (pgbench + warm-up + drain): \($wall / $needed * 100 | round / 100); runs alone (first run assigned -> Complete): \(($completed - $first) / $needed * 100 | round / 100)",
      "per-run overhead (mean, first run assigned -> last run recorded, beyond pgbench + warm-up + drain): \((($runs | map(.recorded) | max) - $first - $needed) / ($runs | length) * 10 | round / 10) s; last run recorded -> Complete seen \(($completed - ($runs | map(.recorded) | max)) * 10 | round / 10) s",
      "per-run overhead (median): runner beyond warm-up + pgbench + drain \($o | map(.runner) | median * 10 | round / 10) s, record written -> next run assigned \($o | map(.operator) | median * 10 | round / 10) s",
      "rows (destination/clients/repeat: drain to the last record, why it ended, for shippers when the last count started; the runner'"'"'s time beyond warm-up, pgbench and drain):",
      ($runs[] as $run | .status.results[] | .destination as $d | .clients as $c | .repeats[]
       | select("\($d)/\($c)/\(.repeat)" == $run.key)
       | "  \($run.key): \(.drainSeconds * 10 | round / 10) s, \(.drainEnd // "-")"
         + (if .drainCurve then ", last count at \(.drainCurve | last | .afterSeconds * 10 | round / 10) s" else "" end)
         + "; runner beyond \((($run.recorded - $run.assigned) - ($pgbench + $run.warmup + $run.drain)) * 10 | round / 10) s")
  ' "$1"
}

# watch_values KIND NAME-OR-SELECTOR JSONPATH watches objects until killed, printing each value
# JSONPATH takes with when this machine saw it, in seconds: the cluster's timestamps have
# whole seconds only.
watch_values() {
  kubectl -n "$namespace" get "$1" "$2" --watch -o jsonpath="$3{\"\\n\"}" | while read -r value; do
    [ -z "$value" ] || printf '%s %s\n' "$value" "$(date +%s.%N)"
  done
}

# first_seen maps each value of watch_values' output to when it was first seen.
first_seen() {
  jq -nR '[inputs | split(" ") | {(.[0]): (.[1] | tonumber)}] | reverse | add // {}'
}

for ((i = 1; i <= repeats; i++)); do
  # The last benchmark's records and volumes gone first: the watch below would see its
  # records, and the operator waits for its volumes before it creates clusters again.
  kubectl -n "$namespace" delete loggingbenchmark "$name" --ignore-not-found --cascade=foreground --timeout=5m >/dev/null
  while kubectl -n "$namespace" get persistentvolumeclaims -o name | grep -q "^persistentvolumeclaim/$name-"; do
    sleep 1
  done
  applied=$(date +%s.%N)
  kubectl -n "$namespace" apply -f "$work/benchmark.yaml" >/dev/null
  # When the operator assigned each run to its runner: when the watch first shows it as
  # the benchmark's current run, with currentSince. Events would not do: Kubernetes
  # combines an object's similar events past ten.
  watch_values loggingbenchmark "$name" '{.status.progress.current}@{.status.progress.currentSince}' >"$work/assigned" &
  assigned_watch=$!
  watch_values loggingbenchmarkruns "--selector=bench.logbench.io/benchmark=$name" \
    '{.spec.destination}/{.spec.clients}/{.spec.repeat}' >"$work/recorded" &
  recorded_watch=$!
  kubectl -n "$namespace" wait --for=condition=Complete "loggingbenchmark/$name" --timeout=40m >/dev/null
  completed=$(date +%s.%N)
  # Each watch is a pipeline in a subshell: end its commands.
  pkill -P "$assigned_watch" || true
  pkill -P "$recorded_watch" || true
  wait "$assigned_watch" "$recorded_watch" 2>/dev/null || true
  # The current run is assigned once the clusters are up and currentSince is set.
  grep -v '^[^ ]*@ ' "$work/assigned" | sed 's/@[^ ]*//' | first_seen >"$work/assigned.json"
  first_seen <"$work/recorded" >"$work/recorded.json"
  selector=bench.logbench.io/benchmark=$name
  # The status aggregates; each run's result is in its LoggingBenchmarkRun: put them back
  # into their rows, as kubectl logbench report does.
  kubectl -n "$namespace" get loggingbenchmarkruns -l "$selector" -o json >"$work/runs.json"
  kubectl -n "$namespace" get loggingbenchmark "$name" -o json | jq --slurpfile runs "$work/runs.json" '
    .status.results |= map(.destination as $d | .clients as $c
      | .repeats = ([$runs[0].items[] | select(.spec.destination == $d and .spec.clients == $c)
          | .status + {repeat: .spec.repeat}] | sort_by(.repeat)))' >"$work/benchmark.json"
  echo "benchmark $i of $repeats:"
  report "$work/benchmark.json" "$work/assigned.json" "$work/recorded.json" "$applied" "$completed"
done
