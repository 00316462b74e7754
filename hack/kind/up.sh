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
# KIND_NODES (default 1) nodes take pods: one control plane, without its NoSchedule taint,
# and KIND_NODES-1 workers.
# Usage: hack/kind/up.sh   (KIND_IMAGES, KIND_NODES, KIND_CLUSTER, IMG, CONTAINER_TOOL and
#   the versions of hack/versions.env may be set)
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
[[ "$KIND_NODES" =~ ^[1-9][0-9]*$ ]] || die "KIND_NODES=${KIND_NODES}: use a number of nodes, 1 or more"

# cluster_nodes prints the nodes section of the cluster's configuration: kind's default,
# one control plane, unless KIND_NODES asks for workers beside it.
cluster_nodes() {
  [ "$KIND_NODES" -gt 1 ] || return 0
  echo "nodes:"
  echo "- role: control-plane"
  for _ in $(seq 2 "$KIND_NODES"); do echo "- role: worker"; done
}

# untaint_control_plane lets every node take pods: kind removes the control plane's
# NoSchedule taint on a cluster of one node only, and placement: Apart needs two nodes.
untaint_control_plane() {
  local node
  for node in $("${KUBECTL[@]}" get nodes -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.taints[*].key}{"\n"}{end}' |
    awk '/ node-role.kubernetes.io\/control-plane( |$)/ {print $1}'); do
    "${KUBECTL[@]}" taint nodes "$node" node-role.kubernetes.io/control-plane:NoSchedule-
  done
}

# connect_pod_networks gives each offline node's pods the node's share of the pod subnet
# and routes every other node's share to that node over kind's Docker network, which is
# what kindnetd does on kind's own node image. The node image's CNI bridge holds the first
# share, the first node's (the control plane registers first); a worker that started pods
# before its bridge got its own share has them made again there. Pods reach other nodes'
# pods from their own addresses, which NetworkPolicies match: the bridge masquerades what
# leaves its share, so traffic between shares returns before its rule.
connect_pod_networks() {
  local pod_subnet nodes name cidr other other_cidr other_address
  pod_subnet=$(awk '$1 == "podSubnet:" {print $2}' "${REPO_ROOT}/hack/kind/cluster.yaml")
  nodes=$("${KUBECTL[@]}" get nodes -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.podCIDR}{" "}{.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}')
  while read -r name cidr _; do
    [ -n "$cidr" ] || die "node ${name} has no podCIDR"
    if ! docker exec "$name" grep -qF "\"subnet\": \"${cidr}\"" "$CNI_CONFIG"; then
      log "giving ${name}'s pods ${cidr}"
      docker exec "$name" sed -i "s#\"subnet\": \"[^\"]*\"#\"subnet\": \"${cidr}\"#" "$CNI_CONFIG"
      "${KUBECTL[@]}" get pods -A --field-selector "spec.nodeName=${name}" \
        -o jsonpath='{range .items[*]}{.metadata.namespace}{" "}{.metadata.name}{" "}{.spec.hostNetwork}{"\n"}{end}' |
        while read -r namespace pod host_network; do
          [ "$host_network" = true ] || "${KUBECTL[@]}" -n "$namespace" delete pod "$pod" --wait=false
        done
    fi
    docker exec "$name" sh -ec "iptables -t nat -C POSTROUTING -s ${pod_subnet} -d ${pod_subnet} -o eth0 -j RETURN 2>/dev/null ||
      iptables -t nat -I POSTROUTING 1 -s ${pod_subnet} -d ${pod_subnet} -o eth0 -j RETURN"
    while read -r other other_cidr other_address; do
      [ "$other" = "$name" ] || docker exec "$name" ip route replace "$other_cidr" via "$other_address"
    done <<<"$nodes"
  done <<<"$nodes"
}

started=$SECONDS
"${REPO_ROOT}/hack/kind/dockerd.sh" up
node_image=()
cluster_config=$(mktemp)
trap 'rm -f "$cluster_config"' EXIT
{
  cat "${REPO_ROOT}/hack/kind/cluster.yaml"
  cluster_nodes
} >"$cluster_config"
# Offline, the image builds on the stand-ins of the Dockerfile's base images, which carry
# no digest for the Dockerfile's pinned references to match.
docker_build_flags=
if [ "$KIND_IMAGES" = offline ]; then
  node_image=(--image "$("${REPO_ROOT}/hack/kind/node-image.sh")")
  "${REPO_ROOT}/hack/kind/offline-base-images.sh"
  docker_build_flags=$("${REPO_ROOT}/hack/kind/offline-base-images.sh" --build-args)
  # kubeadm deploys the CoreDNS that the node image preloads, the local cluster's.
  cat >>"$cluster_config" <<EOF
kubeadmConfigPatches:
- |
  kind: ClusterConfiguration
  dns:
    imageRepository: ${IMAGE_REGISTRY}
    imageTag: "${COREDNS_VERSION}"
EOF
fi

if ! "$KIND" get clusters 2>/dev/null | grep -qxF "$KIND_CLUSTER"; then
  log "creating kind cluster ${KIND_CLUSTER} of ${KIND_NODES} node(s)"
  "$KIND" create cluster --name "$KIND_CLUSTER" "${node_image[@]}" --config "$cluster_config" --wait 120s
fi
untaint_control_plane
if [ "$KIND_IMAGES" = offline ]; then
  connect_pod_networks
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
