#!/usr/bin/env bash
# Does the client's placement change the overhead of logging? Applies
# hack/bench-placement.yaml (or BENCHMARK.yaml) on the cluster of KUBECONFIG (default: the
# local cluster's, which needs two nodes) in the namespace its operator watches, waits for
# it, and prints the machine, the versions, where each run's client and server ran, and
# the report: csvlog apart against the baseline, csvlog on the server's node against
# none-same.
#
# PIN_NODE_CPUS=1 (opt-in, never in CI; root, cgroup v1) confines the benchmark's pods to
# one core per node while it runs, the first node's to CPU 0 and the second's to CPU 1:
# the local cluster's nodes share the machine's cores, so without it a client "apart"
# still competes with its server for them. It writes cpuset.cpus of each container's
# cgroup as its pod starts, so a process may run unconfined for the second the kubelet
# takes to report the container; the other pods of the cluster are left alone.
# Usage: hack/bench-placement.sh [BENCHMARK.yaml]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$REPO_ROOT"
spec=${1:-hack/bench-placement.yaml}
export KUBECONFIG=${KUBECONFIG:-$PWD/bin/local-cluster/kubeconfig}
namespace=${BENCH_NAMESPACE:-logbench-e2e}
postgres_image=${POSTGRES_IMAGE:-${IMAGE_REGISTRY}/postgresql:15-pgaudit-counter-bookworm}
cpuset_root=/sys/fs/cgroup/cpuset/k8s.io
work=$(mktemp -d)
pinner=
cleanup() {
  [ -z "$pinner" ] || kill -- -"$pinner" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

sed -e "s#@POSTGRES_IMAGE@#${postgres_image}#" "$spec" >"$work/benchmark.yaml"
name=$(kubectl create --dry-run=client -o jsonpath='{.metadata.name}' -f "$work/benchmark.yaml")
mapfile -t nodes < <(kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort)
[ "${#nodes[@]}" -ge 2 ] || die "placement needs two nodes; the cluster has ${#nodes[@]}"

# pin_containers confines each container of the benchmark's pods, as the pod watch reports
# it, to the CPU of its node, logging each pin.
pin_containers() {
  kubectl -n "$namespace" get pods -w -o json | jq --unbuffered -r \
    --arg name "$name" --arg first "${nodes[0]}" --arg second "${nodes[1]}" '
    select(.metadata.labels["bench.logbench.io/benchmark"] == $name
      or ((.metadata.labels["bench.logbench.io/cluster"] // "") | startswith($name + "-")))
    | .spec.nodeName as $node | .metadata.name as $pod
    | ((.status.initContainerStatuses // []) + (.status.containerStatuses // []))[]
    | select(.containerID != null and .state.running != null)
    | "\(if $node == $first then 0 elif $node == $second then 1 else "" end) \(.containerID | sub("^containerd://"; "")) \($pod)"' |
    while read -r cpu id pod; do
      if [ -z "$cpu" ] || [ ! -w "${cpuset_root}/${id}/cpuset.cpus" ] ||
        [ "$(cat "${cpuset_root}/${id}/cpuset.cpus")" = "$cpu" ]; then
        continue
      fi
      echo "$cpu" >"${cpuset_root}/${id}/cpuset.cpus" && log "pinned ${pod} to CPU ${cpu}"
    done
}
if [ "${PIN_NODE_CPUS:-0}" = 1 ]; then
  [ -d "$cpuset_root" ] || die "PIN_NODE_CPUS needs the cgroup v1 cpuset hierarchy at ${cpuset_root}"
  # A process group of its own, so that the watch and its pipe end with it.
  set -m
  pin_containers 2>"$work/pins.log" &
  pinner=$!
  set +m
fi

kubectl -n "$namespace" delete loggingbenchmark "$name" --ignore-not-found --wait=true --timeout=5m >/dev/null
log "applying ${name} (nodes: ${nodes[*]}; PIN_NODE_CPUS=${PIN_NODE_CPUS:-0})"
kubectl -n "$namespace" apply -f "$work/benchmark.yaml" >/dev/null
kubectl -n "$namespace" wait --for=condition=Complete "loggingbenchmark/$name" --timeout=60m >/dev/null

echo "machine: $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), $(uname -sr); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "kubernetes: $(kubectl version -o json | jq -r .serverVersion.gitVersion); cloudnative-pg: $(kubectl -n cnpg-system get deployment -o jsonpath='{.items[0].spec.template.spec.containers[0].image}'); postgres image: ${postgres_image}"
echo "server: $(kubectl -n "$namespace" get pods -l "bench.logbench.io/cluster=${name}-csvlog" -o name | head -1 |
  xargs -r -I{} kubectl -n "$namespace" exec {} -c postgres -- postgres --version)"
echo "runs (destination/clients: client node -> server node, per repeat):"
kubectl -n "$namespace" get loggingbenchmarkruns -l "bench.logbench.io/benchmark=${name}" -o json | jq -r '
  [.items[] | {destination: .spec.destination, clients: .spec.clients, repeat: .spec.repeat,
    nodes: "\(.status.clientNode // "?")->\(.status.serverNode // "?")"}]
  | group_by([.destination, .clients])[] | sort_by(.repeat)
  | "  \(.[0].destination)/\(.[0].clients): \(map(.nodes) | join(" "))"'
if [ -n "$pinner" ]; then
  echo "pins: $(grep -c pinned "$work/pins.log" || true) containers confined to their node's CPU"
fi
go run ./cmd/logbench report -n "$namespace" "$name" -o markdown
