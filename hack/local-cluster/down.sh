#!/usr/bin/env bash
# Stops the local cluster and removes everything it put on the machine: processes
# (including containerd's shims and the containers under them), mounts, iptables chains,
# the bridge, veths, network namespaces and, unless --keep-state, CLUSTER_DIR itself.
# Cached binaries and image archives stay. Safe to run when nothing is up.
# Usage: hack/local-cluster/down.sh [--keep-state]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

keep_state=false
[ "${1:-}" = --keep-state ] && keep_state=true

# descendants PID prints the pids of PID's children, grandchildren and so on.
descendants() {
  local child
  while read -r child; do
    echo "$child"
    descendants "$child"
  done < <(cat /proc/"$1"/task/*/children 2>/dev/null | tr -s ' ' '\n')
}

# stop_pids PID... sends TERM, waits up to ten seconds, then KILLs what is left.
stop_pids() {
  [ $# -gt 0 ] || return 0
  kill "$@" 2>/dev/null || true
  local deadline=$((SECONDS + 10)) pid left
  while [ $SECONDS -lt $deadline ]; do
    left=()
    for pid in "$@"; do alive "$pid" && left+=("$pid"); done
    [ ${#left[@]} -gt 0 ] || return 0
    sleep 0.5
  done
  kill -9 "${left[@]}" 2>/dev/null || true
}

# containerd's shims outlive containerd; they are recognised by the socket they serve,
# any node's.
# Their containers are killed first, so that the shims reap them.
stop_shims() {
  local cmdline shim shims=() containers=()
  for cmdline in /proc/[0-9]*/cmdline; do
    if tr '\0' ' ' 2>/dev/null <"$cmdline" | grep -qE "^[^ ]*containerd-shim[^ ]* .*-address ${CLUSTER_DIR}/([^ ]*/)?run/containerd/containerd.sock( |$)"; then
      shim=${cmdline#/proc/}
      shim=${shim%/cmdline}
      shims+=("$shim")
      # shellcheck disable=SC2207
      containers+=($(descendants "$shim"))
    fi
  done
  [ ${#shims[@]} -eq 0 ] && return
  log "stopping ${#containers[@]} container processes and ${#shims[@]} shims"
  # Containers hold nothing worth a graceful stop, and a pause process, pid 1 of its
  # namespace, ignores TERM.
  [ ${#containers[@]} -eq 0 ] || kill -9 "${containers[@]}" 2>/dev/null || true
  stop_pids "${shims[@]}"
}

stop_components() {
  local index name file node names=("${COMPONENTS[@]}")
  # In reverse start order: the other nodes first, then the first one and the control plane.
  for node in $(extra_nodes); do
    use_node "$node"
    names+=("${NODE_COMPONENTS[@]/%/${node_suffix}}")
  done
  for ((index = ${#names[@]} - 1; index >= 0; index--)); do
    name=${names[index]}
    file=$(pid_file "$name")
    [ -f "$file" ] || continue
    if running "$name"; then
      log "stopping ${name}"
      stop_pids "$(cat "$file")"
    fi
    rm -f "$file"
  done
}

# Removes the chains kube-proxy, the kubelet, the CNI plugins and kube-router's network
# policy controller made, and every rule jumping to them, in both address families, then
# the controller's ipsets, which no rule names any more.
clean_iptables() {
  if [ -x "${KUBE_BIN}/kube-proxy" ]; then
    "${KUBE_BIN}/kube-proxy" --cleanup >/dev/null 2>&1 || true
  fi
  local family table rule chain
  for family in iptables ip6tables; do
    command -v "$family" >/dev/null || continue
    for table in filter nat mangle; do
      while read -r rule; do
        eval "$family -t $table -D ${rule#-A }" 2>/dev/null || true
      done < <("${family}-save" -t "$table" 2>/dev/null | grep -E '^-A ' | grep -E -- '-j (KUBE-|CNI-)' || true)
      for chain in $("${family}-save" -t "$table" 2>/dev/null | sed -n 's/^:\(\(KUBE\|CNI\)-[^ ]*\) .*/\1/p'); do
        "$family" -t "$table" -F "$chain" 2>/dev/null || true
      done
      for chain in $("${family}-save" -t "$table" 2>/dev/null | sed -n 's/^:\(\(KUBE\|CNI\)-[^ ]*\) .*/\1/p'); do
        "$family" -t "$table" -X "$chain" 2>/dev/null || true
      done
    done
  done
  command -v ipset >/dev/null || return 0
  local set
  for set in $(ipset list -n 2>/dev/null | grep -E '^(inet6:)?KUBE-(SRC|DST)-' || true); do
    ipset destroy "$set" 2>/dev/null || true
  done
}

# cluster_mounts prints the mount points the cluster made, deepest first.
cluster_mounts() {
  awk '{print $5}' /proc/self/mountinfo |
    grep -E "^(${CLUSTER_DIR}/|/run/containerd/|/run/netns/cni-|/var/run/netns/cni-)" |
    awk '{print length, $0}' | sort -rn | cut -d' ' -f2- || true
}

unmount_cluster_mounts() {
  local mount
  for mount in $(cluster_mounts); do
    umount "$mount" 2>/dev/null || umount -l "$mount" 2>/dev/null || true
  done
}

clean_mounts() {
  unmount_cluster_mounts
  if [ -f "$NETNS_MOUNT_MADE" ]; then
    delete_node_namespaces
    umount /run/netns 2>/dev/null || umount -l /run/netns
    rm -f "$NETNS_MOUNT_MADE"
    unmount_cluster_mounts
  fi
  [ -z "$(cluster_mounts)" ] || die "mounts left behind: $(cluster_mounts | tr '\n' ' ')"
}

delete_node_namespaces() {
  local namespace
  for namespace in /run/netns/lbnode*; do
    [ -e "$namespace" ] || continue
    ip netns delete "${namespace##*/}" 2>/dev/null || true
  done
}

clean_network() {
  local namespace link
  for namespace in /run/netns/cni-*; do
    [ -e "$namespace" ] || continue
    ip netns delete "${namespace##*/}" 2>/dev/null || true
  done
  delete_node_namespaces
  if ip link show "$BRIDGE" >/dev/null 2>&1; then
    for link in $(ip -o link show master "$BRIDGE" | awk -F': ' '{print $2}' | cut -d@ -f1); do
      ip link delete "$link" 2>/dev/null || true
    done
    ip link delete "$BRIDGE"
  fi
  # libcni caches each attachment's result: the bridge's under the network's name, the
  # loopback's under cni-loopback, both keyed by the sandbox id.
  local result sandbox
  for result in /var/lib/cni/results/logbench-*; do
    [ -e "$result" ] || continue
    sandbox=${result#/var/lib/cni/results/logbench-}
    sandbox=${sandbox%%-*}
    rm -f "$result" "/var/lib/cni/results/cni-loopback-${sandbox}-lo"
  done
  rmdir /var/lib/cni/results /var/lib/cni 2>/dev/null || true
  local before=${CLUSTER_DIR}/run/ip_forward.before
  if [ -f "$before" ]; then
    cat "$before" >/proc/sys/net/ipv4/ip_forward
    rm -f "$before"
  fi
}

stop_shims
stop_components
stop_shims
clean_mounts
clean_iptables
clean_network
# What the kubelet and containerd put in fixed places: the kubelet's links to the pod
# logs and its device-plugin socket, containerd's opt folder of older runs, empty
# namespace folders.
clean_fixed_paths() {
  if [ -d /var/log/containers ]; then
    find /var/log/containers -maxdepth 1 -type l -lname "${CLUSTER_DIR}/*" -delete
    rmdir /var/log/containers 2>/dev/null || true
  fi
  rm -f /var/lib/kubelet/device-plugins/kubelet.sock
  rmdir /var/lib/kubelet/device-plugins /var/lib/kubelet /opt/containerd/lib /opt/containerd/bin \
    /opt/containerd /run/netns 2>/dev/null || true
}

clean_fixed_paths
# runc and the shims keep their state under /run/containerd whatever the configuration.
if [ -d /run/containerd ] && ! pgrep -x containerd >/dev/null; then rm -rf /run/containerd; fi
if [ "$keep_state" = false ] && [ -d "$CLUSTER_DIR" ]; then
  log "removing ${CLUSTER_DIR}"
  rm -rf --one-file-system "$CLUSTER_DIR"
fi
log "local cluster down"
