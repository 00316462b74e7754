#!/usr/bin/env bash
# Builds Kubernetes server binaries from the Go module proxy (no release downloads are
# reachable here). Usage: hack/build-kube.sh OUT_DIR COMPONENT...
# Components are k8s.io/kubernetes/cmd/<name> (kube-apiserver, kubelet, ...). A binary
# already present in OUT_DIR is never rebuilt; the throwaway build module lives in
# $HOME/.cache/logbench so Go's build cache makes re-runs cheap.
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-1.34.4}
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

mkdir -p "$out"
out=$(cd "$out" && pwd)
work=${HOME}/.cache/logbench/kube-build-v${KUBE_VERSION}
mkdir -p "$work"
cd "$work"
# envtest's apiserver and the local cluster's binaries may build at once (.ci/run brings
# the cluster up beside make test): one build module, one writer at a time. Envtest's
# kube-apiserver is the cluster's (both in bin/k8s): the second may find it built.
exec 9>"$work/.lock"
flock 9
missing "$@"
[ ${#missing[@]} -gt 0 ] || exit 0

# The build module imports every component it can build, so that go.sum holds their
# dependencies; a module made before a component joined the list is made again.
components=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubeadm kubectl)
if [ ! -f go.sum ] || ! grep -q '"k8s.io/kubernetes/cmd/kubectl"' tools.go; then
  rm -f go.mod go.sum
  go mod init logbench.local/kube-build >/dev/null 2>&1
  kube_dir=$(go mod download -json "k8s.io/kubernetes@v${KUBE_VERSION}" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  # k8s.io/kubernetes replaces its staging modules with local paths; point each at the
  # published module of the matching v0 version instead.
  staging_version="v0.${KUBE_VERSION#1.}"
  sed -n 's#^\t\(k8s.io/[a-z0-9-]*\) => ./staging/.*#\1#p' "$kube_dir/go.mod" | while read -r module; do
    go mod edit -replace "${module}=${module}@${staging_version}"
  done
  go mod edit -require "k8s.io/kubernetes@v${KUBE_VERSION}"
  printf 'package tools\n\nimport (\n' >tools.go
  for component in "${components[@]}"; do
    printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$component" >>tools.go
  done
  printf ')\n' >>tools.go
  go mod tidy >/dev/null
fi

minor=${KUBE_VERSION#1.}
minor=${minor%%.*}
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=v${KUBE_VERSION} -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=${minor}"
echo "building ${missing[*]} v${KUBE_VERSION} (first time takes several minutes)" >&2
# One go build for all of them: their links (one core each) overlap each other's compiles.
# CGO off and -trimpath, as every other Go build here: they share the compiled packages
# they have in common (client-go with the network policy controller and logbench).
CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/" "${missing[@]/#/k8s.io/kubernetes/cmd/}"
