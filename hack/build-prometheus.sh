#!/usr/bin/env bash
# Builds the Prometheus Operator stack of the local e2e cluster from the Go module proxy:
# Prometheus (cmd/prometheus, without its web UI, Kubernetes service discovery only), the
# Prometheus Operator and its config reloader, at PROMETHEUS_MODULE_VERSION and
# PROMETHEUS_OPERATOR_VERSION. No release downloads or images are reachable here.
# Usage: hack/build-prometheus.sh [OUT_DIR]   (default: bin/)
# Writes OUT_DIR/prometheus-v<version>, OUT_DIR/prometheus-operator-v<version> and
# OUT_DIR/prometheus-config-reloader-v<version>, each with a symlink without the version.
# A binary already present is never rebuilt; the throwaway build modules live in
# CACHE_DIR so Go's module and build caches make a rebuild cheap.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/go.sh"

out=$(made_dir "${1:-${REPO_ROOT}/bin}")

# build_in_module WORK MODULE@VERSION VERSION TAGS NAME=PACKAGE... builds each PACKAGE of
# MODULE as OUT_DIR/NAME-vVERSION in the throwaway module WORK, each project in a module
# of its own since the operator requires an older Prometheus. Both read their version
# from prometheus/common.
build_in_module() {
  local work=$1 module=$2 version=$3 tags=$4 target
  shift 4
  local missing=() packages=()
  for target in "$@"; do
    packages+=("${target#*=}")
    [ -x "${out}/${target%%=*}-v${version}" ] || missing+=("$target")
  done
  if ((${#missing[@]})); then
    go_module_init --tags "$tags" "$work" "$module" "${packages[@]}"
    for target in "${missing[@]}"; do
      log "building ${target#*=} ${version} (first time takes several minutes)"
      go_build ${tags:+-tags "$tags"} -X "github.com/prometheus/common/version.Version=${version}" \
        "$work" "${out}/${target%%=*}-v${version}" "${target#*=}"
    done
  fi
  for target in "$@"; do ln -sfn "${target%%=*}-v${version}" "${out}/${target%%=*}"; done
}

# The operator discovers scrape targets for Prometheus through Kubernetes service
# discovery only: the other discovery plugins are left out of the build.
build_in_module "${CACHE_DIR}/prometheus-build-v${PROMETHEUS_MODULE_VERSION}" \
  "github.com/prometheus/prometheus@v${PROMETHEUS_MODULE_VERSION}" "$PROMETHEUS_VERSION" \
  remove_all_sd,enable_kubernetes_sd prometheus=github.com/prometheus/prometheus/cmd/prometheus
operator=github.com/prometheus-operator/prometheus-operator
build_in_module "${CACHE_DIR}/prometheus-operator-build-v${PROMETHEUS_OPERATOR_VERSION}" \
  "${operator}@v${PROMETHEUS_OPERATOR_VERSION}" "$PROMETHEUS_OPERATOR_VERSION" "" \
  "prometheus-operator=${operator}/cmd/operator" \
  "prometheus-config-reloader=${operator}/cmd/prometheus-config-reloader"
