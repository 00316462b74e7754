#!/usr/bin/env bash
# Builds Kubernetes server binaries from the Go module proxy (no release downloads are
# reachable here). Usage: hack/build-kube.sh OUT_DIR COMPONENT...
# Components are k8s.io/kubernetes/cmd/<name> (kube-apiserver, kubelet, ...), at
# KUBE_VERSION. A binary already present in OUT_DIR is never rebuilt; the throwaway build
# module lives in CACHE_DIR so Go's build cache makes re-runs cheap.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/go.sh"

out=$1
shift
[ $# -gt 0 ] || {
  echo "usage: $0 OUT_DIR COMPONENT..." >&2
  exit 2
}

# missing lists the components not in OUT_DIR yet.
missing() {
  missing=()
  for component in "$@"; do
    [ -x "$out/$component" ] || missing+=("$component")
  done
}
missing "$@"
[ ${#missing[@]} -gt 0 ] || exit 0

out=$(made_dir "$out")
work=${CACHE_DIR}/kube-build-v${KUBE_VERSION}
mkdir -p "$work"
# envtest's apiserver and the local cluster's binaries may build at once (.ci/run brings
# the cluster up beside make test): one build module, one writer at a time. Envtest's
# kube-apiserver is the cluster's (both in bin/k8s): the second may find it built.
exec 9>"$work/.lock"
flock 9
missing "$@"
[ ${#missing[@]} -gt 0 ] || exit 0

# replace_staging KUBERNETES@VERSION points each staging module that k8s.io/kubernetes
# replaces with a local path at the published module of the matching v0 version.
replace_staging() {
  local kube_dir module
  kube_dir=$(go_module_dir "$1")
  sed -n 's#^\t\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$kube_dir/go.mod" | while read -r module; do
    go mod edit -replace "${module}=${module}@v0.${KUBE_VERSION#1.}"
  done
}

# kube_module KUBERNETES@VERSION makes the build module resolve Kubernetes: its staging
# modules replaced (replace_staging), and what logbench's go.mod requires required too.
# Logbench requires the same k8s.io modules, but newer versions of the packages around
# them (x/net, protobuf, ...): at Kubernetes's own, envtest's kube-apiserver compiles
# client-go and everything above it again after make test compiled logbench's; at
# logbench's it finds them compiled, and takes half the CPU time. Requirements only raise
# versions: none of Kubernetes's goes down.
kube_module() {
  replace_staging "$1"
  go_mod_copy "${REPO_ROOT}/go.mod" require
}

# The build module imports every component it can build, so that go.sum holds their
# dependencies.
components=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubeadm kubectl)
go_module_init --edit kube_module --stamp "logbench's go.mod $(sha256sum <"${REPO_ROOT}/go.mod" | cut -c1-16)" \
  "$work" "k8s.io/kubernetes@v${KUBE_VERSION}" \
  "${components[@]/#/k8s.io/kubernetes/cmd/}"

minor=${KUBE_VERSION#1.}
minor=${minor%%.*}
log "building ${missing[*]} v${KUBE_VERSION} (first time takes several minutes)"
# One go build for all of them: their links (one core each) overlap each other's compiles.
go_build -X "k8s.io/component-base/version.gitVersion=v${KUBE_VERSION}" -X k8s.io/component-base/version.gitMajor=1 \
  -X "k8s.io/component-base/version.gitMinor=${minor}" "$work" "$out/" "${missing[@]/#/k8s.io/kubernetes/cmd/}"
