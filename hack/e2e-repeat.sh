#!/usr/bin/env bash
# Runs the e2e specs whose text matches FOCUS N times in a row on the local cluster
# (make local-cluster-up first, as root), each run a fresh `go test`, and stops at the
# first failure. Between runs it waits until the suite's benchmarks are gone and frees
# the volumes they used, so that each run starts as CI's does. For example, ten runs in
# a row of the shipping spec: hack/e2e-repeat.sh 10 'ships every record through Fluent Bit'.
# Logs go to bin/e2e-repeat/run-I.log.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
cd "$REPO_ROOT"
runs=${1:?usage: hack/e2e-repeat.sh N FOCUS}
focus=${2:?usage: hack/e2e-repeat.sh N FOCUS}
kubeconfig=${KUBECONFIG:-$PWD/bin/local-cluster/kubeconfig}
logs=bin/e2e-repeat
mkdir -p "$logs"

for run in $(seq 1 "$runs"); do
  start=$SECONDS
  if ! E2E_PROVIDER=local KUBECONFIG="$kubeconfig" \
    E2E_LOKI_IMAGE="${IMAGE_REGISTRY}/loki:${LOKI_VERSION}" E2E_COLLECTOR_IMAGE="${IMAGE_REGISTRY}/otelcol:${OTELCOL_BUILDER_VERSION#v}" \
    E2E_FLUENT_BIT_IMAGE="${IMAGE_REGISTRY}/fluent-bit:${FLUENT_BIT_VERSION}" \
    go test -tags e2e ./test/e2e/ -count=1 -timeout 60m -v -ginkgo.v -ginkgo.focus "$focus" \
    >"$logs/run-$run.log" 2>&1; then
    echo "run $run of $runs failed after $((SECONDS - start)) s: $logs/run-$run.log" >&2
    exit 1
  fi
  echo "run $run of $runs passed in $((SECONDS - start)) s ($(date -u +%H:%M:%S))"
  KUBECONFIG="$kubeconfig" kubectl wait --for=delete loggingbenchmarks --all -n logbench-e2e --timeout=10m >/dev/null
  # The in-tree recycler leaves some volumes Failed ("failed to delete recycler pod"):
  # bringing the cluster up again empties and offers them again (up.sh).
  make --no-print-directory local-cluster-up >"$logs/up-$run.log" 2>&1
done
