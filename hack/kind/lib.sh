# shellcheck shell=bash
# The variables are used by the scripts that source this file, where shellcheck follows
# them; alone, it would call each one unused.
# shellcheck disable=SC2034

# Settings of the kind scripts (up.sh, load.sh, down.sh, node-image.sh,
# offline-base-images.sh, dockerd.sh), on top of hack/lib. Sourced, not run.

source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../lib/go.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../lib/rootfs.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../lib/image.sh"

KIND=${KIND:-${REPO_ROOT}/bin/kind}
KIND_CLUSTER=${KIND_CLUSTER:-logbench-e2e}
# KIND_NODES: the cluster's nodes, all schedulable: one control plane and KIND_NODES-1
# workers. Read when up.sh creates the cluster; a cluster up already keeps its own.
KIND_NODES=${KIND_NODES:-1}
# KIND_IMAGES chooses where images come from: upstream (kind's node image and the
# upstream images, pulled) or offline (every image built here: node-image.sh).
KIND_IMAGES=${KIND_IMAGES:-upstream}
# The offline node image and what it is built of.
KIND_NODE_IMAGE=${KIND_NODE_IMAGE:-${IMAGE_REGISTRY}/kind-node:v${KUBE_VERSION}}
KIND_NODE_BIN=${REPO_ROOT}/bin/kind-node
# The offline node's CNI configuration, in the node (node-image.sh writes it, up.sh gives
# each node its share of the pod subnet).
CNI_CONFIG=/etc/cni/net.d/10-bridge.conflist

# docker_image_exists IMAGE succeeds when the Docker engine holds IMAGE.
docker_image_exists() { docker image inspect "$1" >/dev/null 2>&1; }

# docker_answers succeeds when a Docker engine answers.
docker_answers() { docker info >/dev/null 2>&1; }

# lacks_sys_resource succeeds when CAP_SYS_RESOURCE (capability 24) is outside this
# machine's capability bounding set, as in this project's sandboxes.
lacks_sys_resource() {
  local bounding
  bounding=$((16#$(awk '/^CapBnd/ {print $2}' /proc/self/status)))
  (((bounding & (1 << 24)) == 0))
}

# suite_archives prints the archives of hack/images.sh that a kind cluster runs, one a
# line: every one but logbench's, which make docker-build builds from the Dockerfile.
suite_archives() {
  local archive
  for archive in "${IMAGE_CACHE}"/*_*.tar; do
    case "$(basename "$archive")" in logbench_*) ;; *) echo "$archive" ;; esac
  done
}
