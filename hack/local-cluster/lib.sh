# shellcheck shell=bash
# The variables are used by the scripts that source this file, where shellcheck follows
# them; alone, it would call each one unused.
# shellcheck disable=SC2034

# Settings of the local cluster scripts (up.sh, load.sh, down.sh, status.sh), on top of
# hack/lib. Sourced, not run. Every path the cluster writes lives under CLUSTER_DIR, except
# what containerd, runc and CNI hard-code (/run/containerd, /run/netns, /var/lib/cni),
# which down.sh removes too.

source "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../lib/go.sh"
source "$(dirname "${BASH_SOURCE[0]}")/../lib/image.sh"

LOCAL_BIN=${REPO_ROOT}/bin/local-cluster
KUBECONFIG_FILE=${LOCAL_BIN}/kubeconfig
# Runtime state of one cluster: certificates, etcd data, containerd, kubelet, logs, pids.
CLUSTER_DIR=${LOGBENCH_CLUSTER_DIR:-${CACHE_DIR}/cluster}

# The node and the API server live on the bridge's gateway address, so that pods reach the
# API server through the kubernetes Service and the host reaches the kubelet, while
# nothing listens on the machine's external interfaces.
BRIDGE=lbcni0
POD_CIDR=10.244.0.0/24
NODE_IP=10.244.0.1
SERVICE_CIDR=10.96.0.0/16
API_SERVICE_IP=10.96.0.1
DNS_SERVICE_IP=10.96.0.10
API_PORT=6443
NODE_NAME=logbench-node

CONTAINERD_SOCKET=${CLUSTER_DIR}/run/containerd/containerd.sock
CTR=(ctr --address "${CONTAINERD_SOCKET}" -n k8s.io)

# Processes in start order; down.sh stops them in reverse.
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy netpol)

pid_file() { echo "${CLUSTER_DIR}/run/$1.pid"; }

# running COMPONENT succeeds when the process recorded for COMPONENT is alive.
running() {
  local file
  file=$(pid_file "$1")
  [ -f "$file" ] && alive "$(cat "$file")"
}

kubectl_local() { kubectl --kubeconfig "${KUBECONFIG_FILE}" "$@"; }

# import_images loads every cached archive that containerd does not hold yet.
import_images() {
  local present archive image
  present=$("${CTR[@]}" images ls -q)
  for archive in "${IMAGE_CACHE}"/*_*.tar; do
    image=$(archive_image "$archive")
    grep -qxF "$image" <<<"$present" && continue
    log "importing ${image}"
    import_archive "$archive" "${CTR[@]}" images import
  done
}
