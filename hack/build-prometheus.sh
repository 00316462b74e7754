#!/usr/bin/env bash
# Builds the Prometheus Operator stack of the local e2e cluster from the Go module proxy:
# Prometheus (cmd/prometheus, without its web UI, Kubernetes service discovery only), the
# Prometheus Operator and its config reloader. No release downloads or images are
# reachable here. Usage: hack/build-prometheus.sh [OUT_DIR]   (default: bin/)
# Writes OUT_DIR/prometheus-v<version>, OUT_DIR/prometheus-operator-v<version> and
# OUT_DIR/prometheus-config-reloader-v<version>, each with a symlink without the version.
# A binary already present is never rebuilt; the throwaway build modules live in
# $HOME/.cache/logbench so Go's module and build caches make a rebuild cheap.
set -euo pipefail

# Prometheus 3.x's Go module versions are v0.3MM.P for release 3.MM.P.
PROMETHEUS_MODULE_VERSION=${PROMETHEUS_MODULE_VERSION:-0.316.0}
PROMETHEUS_OPERATOR_VERSION=${PROMETHEUS_OPERATOR_VERSION:-0.88.0}
out=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/bin}
mkdir -p "$out"
out=$(cd "$out" && pwd)
prometheus_version=$(awk -F. '{ printf "%d.%d.%d", int($2 / 100), $2 % 100, $3 }' <<<"$PROMETHEUS_MODULE_VERSION")

# build_in_module WORK MODULE@VERSION VERSION TAGS NAME=PACKAGE... builds each PACKAGE of
# MODULE as OUT_DIR/NAME-vVERSION in the throwaway module WORK, where the module's own
# go.mod rules its dependencies. Both projects read their version from prometheus/common.
build_in_module() {
  local work=$1 module=$2 version=$3 tags=$4 target
  shift 4
  local missing=()
  for target in "$@"; do [ -x "${out}/${target%%=*}-v${version}" ] || missing+=("$target"); done
  if ((${#missing[@]})); then
    mkdir -p "$work"
    (
      cd "$work"
      if [ ! -f go.sum ]; then
        rm -f go.mod
        go mod init logbench.local/build >/dev/null 2>&1
        {
          printf 'package tools\n\nimport (\n'
          for target in "$@"; do printf '\t_ "%s"\n' "${target#*=}"; done
          printf ')\n'
        } >tools.go
        go get "$module" >/dev/null
        go mod tidy >/dev/null
      fi
      for target in "${missing[@]}"; do
        echo "building ${target#*=} ${version} (first time takes several minutes)" >&2
        CGO_ENABLED=0 go build -trimpath ${tags:+-tags "$tags"} -o "${out}/${target%%=*}-v${version}.tmp" \
          -ldflags "-s -w -X github.com/prometheus/common/version.Version=${version}" "${target#*=}"
        mv "${out}/${target%%=*}-v${version}.tmp" "${out}/${target%%=*}-v${version}"
      done
    )
  fi
  for target in "$@"; do ln -sfn "${target%%=*}-v${version}" "${out}/${target%%=*}"; done
}

# The operator discovers scrape targets for Prometheus through Kubernetes service
# discovery only: the other discovery plugins are left out of the build.
build_in_module "${HOME}/.cache/logbench/prometheus-build-v${PROMETHEUS_MODULE_VERSION}" \
  "github.com/prometheus/prometheus@v${PROMETHEUS_MODULE_VERSION}" "$prometheus_version" \
  remove_all_sd,enable_kubernetes_sd prometheus=github.com/prometheus/prometheus/cmd/prometheus
operator=github.com/prometheus-operator/prometheus-operator
build_in_module "${HOME}/.cache/logbench/prometheus-operator-build-v${PROMETHEUS_OPERATOR_VERSION}" \
  "${operator}@v${PROMETHEUS_OPERATOR_VERSION}" "$PROMETHEUS_OPERATOR_VERSION" "" \
  "prometheus-operator=${operator}/cmd/operator" \
  "prometheus-config-reloader=${operator}/cmd/prometheus-config-reloader"
