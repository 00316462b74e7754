# shellcheck shell=bash
# The variables are used by the scripts that source this file, where shellcheck follows
# them; alone, it would call each one unused.
# shellcheck disable=SC2034

# What every script of hack/ shares: the repository's paths, the pinned versions of
# hack/versions.env, logging and waiting. Sourced, not run.

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# load_versions FILE sets each KEY=value of FILE that the environment does not set.
load_versions() {
  local key value
  while IFS='=' read -r key value; do
    case "$key" in '' | '#'*) continue ;; esac
    [ -n "${!key:-}" ] || printf -v "$key" '%s' "$value"
  done <"$1"
}
load_versions "${REPO_ROOT}/hack/versions.env"
# Prometheus 3.MM.P is Go module version 0.3MM.P.
PROMETHEUS_VERSION=$(awk -F. '{ printf "%d.%d.%d", int($2 / 100), $2 % 100, $3 }' <<<"$PROMETHEUS_MODULE_VERSION")

# Slow artifacts (throwaway build modules, image archives) survive wipes of bin/ and are
# shared by every checkout of the machine.
CACHE_DIR=${HOME}/.cache/logbench
IMAGE_CACHE=${LOGBENCH_IMAGE_CACHE:-${CACHE_DIR}/images}
# Images are named under this made-up registry, which no pull reaches: every Pod uses
# imagePullPolicy IfNotPresent or Never.
IMAGE_REGISTRY=logbench.local
# Kubernetes binaries, beside envtest's kube-apiserver.
KUBE_BIN=${REPO_ROOT}/bin/k8s

log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

die() {
  log "error: $*"
  exit 1
}

# alive PID succeeds when PID runs: a killed process may linger as a zombie when no init
# reaps it.
alive() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "$state" != Z ]
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

# made_dir DIR makes the folder DIR and prints its absolute path.
made_dir() {
  mkdir -p "$1"
  (cd "$1" && pwd)
}

# verify_sha256 FILE SHA256 WHAT dies unless FILE has the pinned SHA256.
verify_sha256() {
  local actual
  actual=$(sha256sum "$1" | cut -d' ' -f1)
  [ "$actual" = "$2" ] || die "${3}: ${1} has sha256 ${actual}, not the pinned ${2} (hack/versions.env)"
}
