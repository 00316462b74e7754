#!/usr/bin/env bash
# Creates (or reuses) a kind cluster for the e2e suite: installs CloudNativePG from its
# release manifest, builds the logbench image with Docker, loads it into the nodes and
# installs the Prometheus Operator stack (the upstream images of the releases the local
# cluster builds) and logbench with its Helm chart, as kube-prometheus-stack users do.
# Needs Docker (or CONTAINER_TOOL), internet access, kubectl and kind (KIND, default bin/kind).
# Usage: hack/kind/up.sh   (KIND_CLUSTER, IMG, CNPG_VERSION, CONTAINER_TOOL,
#   PROMETHEUS_VERSION, PROMETHEUS_OPERATOR_VERSION may be set)
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
KIND=${KIND:-${REPO_ROOT}/bin/kind}
KIND_CLUSTER=${KIND_CLUSTER:-logbench-e2e}
CNPG_VERSION=${CNPG_VERSION:-1.30.0}
PROMETHEUS_VERSION=${PROMETHEUS_VERSION:-3.16.0}
PROMETHEUS_OPERATOR_VERSION=${PROMETHEUS_OPERATOR_VERSION:-0.88.0}
IMG=${IMG:-logbench:e2e}
CONTAINER_TOOL=${CONTAINER_TOOL:-docker}
CONTEXT=kind-${KIND_CLUSTER}
KUBECTL=(kubectl --context "$CONTEXT")

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

if ! "$KIND" get clusters 2>/dev/null | grep -qxF "$KIND_CLUSTER"; then
  log "creating kind cluster ${KIND_CLUSTER}"
  "$KIND" create cluster --name "$KIND_CLUSTER" --config "${REPO_ROOT}/hack/kind/cluster.yaml" --wait 120s
fi

log "installing CloudNativePG ${CNPG_VERSION}"
minor=${CNPG_VERSION%.*}
"${KUBECTL[@]}" apply --server-side --force-conflicts -f \
  "https://raw.githubusercontent.com/cloudnative-pg/cloudnative-pg/release-${minor}/releases/cnpg-${CNPG_VERSION}.yaml" >/dev/null
"${KUBECTL[@]}" -n cnpg-system rollout status deployment/cnpg-controller-manager --timeout=300s

log "building and loading ${IMG}"
(cd "$REPO_ROOT" && make --no-print-directory docker-build IMG="$IMG" CONTAINER_TOOL="$CONTAINER_TOOL")
"$KIND" load docker-image "$IMG" --name "$KIND_CLUSTER"

log "installing the Prometheus Operator stack"
"${REPO_ROOT}/hack/install-prometheus-stack.sh" \
  "quay.io/prometheus-operator/prometheus-operator:v${PROMETHEUS_OPERATOR_VERSION}" \
  "quay.io/prometheus-operator/prometheus-config-reloader:v${PROMETHEUS_OPERATOR_VERSION}" \
  "quay.io/prometheus/prometheus:v${PROMETHEUS_VERSION}" --kube-context "$CONTEXT"

log "installing logbench"
existed=false
"${KUBECTL[@]}" -n logbench-system get deployment/logbench >/dev/null 2>&1 && existed=true
"${REPO_ROOT}/hack/install-logbench.sh" "$IMG" --kube-context "$CONTEXT" --prometheus-release kube-prometheus-stack
# The tag does not change between builds: restart so that the pod runs the image just loaded.
if [ "$existed" = true ]; then
  "${KUBECTL[@]}" -n logbench-system rollout restart deployment/logbench
  "${KUBECTL[@]}" -n logbench-system rollout status deployment/logbench --timeout=300s
fi
log "kind cluster ${KIND_CLUSTER} ready: kubectl --context ${CONTEXT}"
