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
# Every node's pods: node N has 10.244.(N-1).0/24 (see use_node).
CLUSTER_CIDR=10.244.0.0/16
SERVICE_CIDR=10.96.0.0/16
API_SERVICE_IP=10.96.0.1
DNS_SERVICE_IP=10.96.0.10
API_PORT=6443
NODE_NAME=logbench-node

# Schedulable nodes (LOCAL_CLUSTER_NODES): the first is the machine itself; each other one
# runs its own containerd, kubelet, kube-proxy and network policy controller in network and
# mount namespaces of its own, joined to the bridge (use_node).
NODE_COUNT=${LOCAL_CLUSTER_NODES:-1}

CONTAINERD_SOCKET=${CLUSTER_DIR}/run/containerd/containerd.sock
# The other nodes' mount namespaces are kept by files here, on a private mount.
MOUNT_NAMESPACES=${CLUSTER_DIR}/run/mount-namespaces
# Says that the cluster's ip netns made /run/netns a mount point of its own: pod network
# namespaces made before lie hidden beneath it until it goes.
NETNS_MOUNT_MADE=${CLUSTER_DIR}/run/netns-mount.made

# Processes in start order; down.sh stops them in reverse. Every node runs the last four,
# named with node_suffix beyond the first node.
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy netpol)
NODE_COMPONENTS=(containerd kubelet kube-proxy netpol)

# use_node INDEX sets the node_* variables to node INDEX's (from 1). Node N beyond the first
# lives in network namespace lbnodeN at 10.244.0.(256-N) on the bridge, with its pods on
# a bridge of its own at 10.244.(N-1).1; the machine routes their subnet to it.
use_node() {
  local index=$1
  if [ "$index" = 1 ]; then
    node_name=$NODE_NAME node_ip=$NODE_IP node_pod_cidr=$POD_CIDR node_gateway=$NODE_IP
    node_bridge=$BRIDGE node_dir=$CLUSTER_DIR node_suffix="" node_netns=""
    node_exec=()
  else
    node_name=${NODE_NAME}-${index} node_ip=10.244.0.$((256 - index))
    node_pod_cidr=10.244.$((index - 1)).0/24 node_gateway=10.244.$((index - 1)).1
    node_bridge=lbcni$((index - 1)) node_dir=${CLUSTER_DIR}/node-${index}
    node_suffix=-node-${index} node_netns=lbnode${index}
    # Its own network and mounts, shared by its kubelet and containerd (which must see the
    # kubelet's volume mounts): there the pod logs and their /var/log/containers links are
    # the node's own, where the first node has them, as on separate machines.
    node_exec=(nsenter "--net=/run/netns/${node_netns}" "--mount=${MOUNT_NAMESPACES}/${node_netns}")
  fi
  node_socket=${node_dir}/run/containerd/containerd.sock
}

# extra_nodes prints the index of every node beyond the first that has state or a
# network namespace, whatever LOCAL_CLUSTER_NODES says now.
extra_nodes() {
  local path
  for path in "${CLUSTER_DIR}"/node-* /run/netns/lbnode*; do
    [ -e "$path" ] || continue
    path=${path##*/}
    echo "${path##*[!0-9]}"
  done | sort -nu
}

pid_file() { echo "${CLUSTER_DIR}/run/$1.pid"; }

# running COMPONENT succeeds when the process recorded for COMPONENT is alive.
running() {
  local file
  file=$(pid_file "$1")
  [ -f "$file" ] && alive "$(cat "$file")"
}

kubectl_local() { kubectl --kubeconfig "${KUBECONFIG_FILE}" "$@"; }

# import_images [SOCKET] loads every cached archive that the containerd at SOCKET (the
# first node's by default) does not hold yet.
import_images() {
  local ctr=(ctr --address "${1:-$CONTAINERD_SOCKET}" -n k8s.io)
  local present archive image
  present=$("${ctr[@]}" images ls -q)
  for archive in "${IMAGE_CACHE}"/*_*.tar; do
    image=$(archive_image "$archive")
    grep -qxF "$image" <<<"$present" && continue
    log "importing ${image}"
    import_archive "$archive" "${ctr[@]}" images import
  done
}

# import_images_everywhere imports the cached archives into the containerd of every node.
import_images_everywhere() {
  local node
  for node in 1 $(extra_nodes); do
    use_node "$node"
    import_images "$node_socket"
  done
}
