#!/usr/bin/env bash
# Creates (or reuses) a kind cluster for the e2e suite: installs CloudNativePG from its
# release manifest, builds the logbench image with Docker, loads it into the nodes and
# installs the Prometheus Operator stack (the images of the releases the local cluster
# builds) and logbench with its Helm chart, as kube-prometheus-stack users do.
# KIND_IMAGES chooses where images come from:
#   upstream (default, the users' path): kind's official node image, CloudNativePG's
#     release manifest and the upstream images, pulled from their registries;
#   offline (this project's machines, which reach no registry): the node image of
#     hack/kind/node-image.sh, with Kubernetes, CloudNativePG, the operands, shippers and
#     the Prometheus stack built from Debian's packages and the Go module proxy and
#     preloaded, and the Dockerfile's base images from hack/kind/offline-base-images.sh.
# Needs Docker (started here as root when none runs: hack/kind/dockerd.sh), kubectl and
# kind (KIND, default bin/kind).
# Usage: hack/kind/up.sh   (KIND_IMAGES, KIND_CLUSTER, IMG, CONTAINER_TOOL and the
#   versions of hack/versions.env may be set)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

IMG=${IMG:-logbench:e2e}
export IMG KIND KIND_CLUSTER KIND_IMAGES
CONTAINER_TOOL=${CONTAINER_TOOL:-docker}
CONTEXT=kind-${KIND_CLUSTER}
KUBECTL=(kubectl --context "$CONTEXT")

case "$KIND_IMAGES" in
  upstream | offline) ;;
  *) die "KIND_IMAGES=${KIND_IMAGES}: use upstream or offline" ;;
esac

started=$SECONDS
"${REPO_ROOT}/hack/kind/dockerd.sh" up
node_image=()
cluster_config=${REPO_ROOT}/hack/kind/cluster.yaml
# Offline, the image builds on the stand-ins of the Dockerfile's base images, which carry
# no digest for the Dockerfile's pinned references to match.
docker_build_flags=
if [ "$KIND_IMAGES" = offline ]; then
  node_image=(--image "$("${REPO_ROOT}/hack/kind/node-image.sh")")
  "${REPO_ROOT}/hack/kind/offline-base-images.sh"
  docker_build_flags=$("${REPO_ROOT}/hack/kind/offline-base-images.sh" --build-args)
  # kubeadm deploys the CoreDNS that the node image preloads, the local cluster's.
  cluster_config=$(mktemp)
  trap 'rm -f "$cluster_config"' EXIT
  cat "${REPO_ROOT}/hack/kind/cluster.yaml" - >"$cluster_config" <<EOF
kubeadmConfigPatches:
- |
  kind: ClusterConfiguration
  dns:
    imageRepository: ${IMAGE_REGISTRY}
    imageTag: "${COREDNS_VERSION}"
EOF
fi

if ! "$KIND" get clusters 2>/dev/null | grep -qxF "$KIND_CLUSTER"; then
  log "creating kind cluster ${KIND_CLUSTER}"
  "$KIND" create cluster --name "$KIND_CLUSTER" "${node_image[@]}" --config "$cluster_config" --wait 120s
fi
if [ "$KIND_IMAGES" = offline ]; then
  # The offline node's NetworkPolicy enforcement (node-image.sh), which the suite checks.
  "${KUBECTL[@]}" -n kube-system rollout status daemonset/netpol --timeout=120s
fi

log "installing CloudNativePG ${CNPG_VERSION}"
if [ "$KIND_IMAGES" = offline ]; then
  cnpg_manifest | "${KUBECTL[@]}" apply --server-side --force-conflicts -f - >/dev/null
else
  "${KUBECTL[@]}" apply --server-side --force-conflicts -f \
    "https://raw.githubusercontent.com/cloudnative-pg/cloudnative-pg/release-${CNPG_VERSION%.*}/releases/cnpg-${CNPG_VERSION}.yaml" >/dev/null
fi
"${KUBECTL[@]}" -n cnpg-system rollout status deployment/cnpg-controller-manager --timeout=300s

log "building and loading ${IMG}"
(cd "$REPO_ROOT" && make --no-print-directory docker-build IMG="$IMG" CONTAINER_TOOL="$CONTAINER_TOOL" \
  DOCKER_BUILD_FLAGS="$docker_build_flags")
"${REPO_ROOT}/hack/kind/load.sh"

log "installing the Prometheus Operator stack"
if [ "$KIND_IMAGES" = offline ]; then
  stack=("$(stack_image prometheus-operator)" "$(stack_image prometheus-config-reloader)" "$(stack_image prometheus)")
else
  stack=("quay.io/prometheus-operator/prometheus-operator:v${PROMETHEUS_OPERATOR_VERSION}"
    "quay.io/prometheus-operator/prometheus-config-reloader:v${PROMETHEUS_OPERATOR_VERSION}"
    "quay.io/prometheus/prometheus:v${PROMETHEUS_VERSION}")
fi
"${REPO_ROOT}/hack/install-prometheus-stack.sh" "${stack[@]}" --kube-context "$CONTEXT"

log "installing logbench"
existed=false
"${KUBECTL[@]}" -n logbench-system get deployment/logbench >/dev/null 2>&1 && existed=true
"${REPO_ROOT}/hack/install-logbench.sh" "$IMG" --kube-context "$CONTEXT" --prometheus-release kube-prometheus-stack
# The tag does not change between builds: restart so that the pod runs the image just loaded.
if [ "$existed" = true ]; then
  "${KUBECTL[@]}" -n logbench-system rollout restart deployment/logbench
  "${KUBECTL[@]}" -n logbench-system rollout status deployment/logbench --timeout=300s
fi
log "kind cluster ${KIND_CLUSTER} ready in $((SECONDS - started))s: kubectl --context ${CONTEXT}"
