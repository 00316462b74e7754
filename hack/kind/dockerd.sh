#!/usr/bin/env bash
# Starts or stops a Docker engine for the kind cluster on a machine that has none running
# (this project's machines): `up` installs Debian's docker.io when dockerd is missing,
# records the filter table's FORWARD policy and ip_forward, and starts dockerd; `down`
# stops the dockerd that `up` started, removes the bridges, rules and chains it made and
# restores what it recorded. Every other rule stays: a local cluster (hack/local-cluster)
# running meanwhile keeps what its kube-proxy and network policy controller programmed.
# A Docker engine that was already running is used and left alone.
# Usage: hack/kind/dockerd.sh up|down   (as root)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

STATE=${CACHE_DIR}/dockerd
PID_FILE=${STATE}/dockerd.pid

up() {
  if docker_answers; then
    log "a Docker engine is running: using it"
    return
  fi
  [ "$(id -u)" = 0 ] || die "no Docker engine answers, and starting one needs root"
  local missing=()
  command -v dockerd >/dev/null || missing+=(docker.io)
  command -v jq >/dev/null || missing+=(jq)
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  mkdir -p "$STATE"
  # What dockerd changes on the host beside its own rules and chains: the filter table's
  # FORWARD policy and ip_forward. The first up keeps them until down restores them.
  if [ ! -f "${STATE}/forward-policy.before" ]; then
    iptables -S FORWARD | awk '$1 == "-P" {print $3}' >"${STATE}/forward-policy.before"
    cat /proc/sys/net/ipv4/ip_forward >"${STATE}/ip_forward.before"
  fi
  local runtime=()
  if lacks_sys_resource; then
    log "CAP_SYS_RESOURCE is outside this machine's capability bounding set: containers run through hack/kind/runc-without-sys-resource"
    runtime=(--add-runtime "logbench-runc=${REPO_ROOT}/hack/kind/runc-without-sys-resource" --default-runtime logbench-runc)
  fi
  log "starting dockerd (log: ${STATE}/dockerd.log)"
  setsid dockerd --pidfile "$PID_FILE" "${runtime[@]}" >>"${STATE}/dockerd.log" 2>&1 </dev/null &
  wait_for "dockerd to answer" 60 docker info
}

down() {
  if [ ! -f "$PID_FILE" ]; then
    log "no dockerd started by hack/kind/dockerd.sh up: nothing to stop"
    return
  fi
  local pid network
  pid=$(cat "$PID_FILE")
  if alive "$pid"; then
    # Networks are removed while the engine runs: it deletes their bridges itself.
    for network in $(docker network ls --filter driver=bridge --format '{{.Name}}'); do
      [ "$network" = bridge ] || docker network rm "$network" >/dev/null 2>&1 || true
    done
    log "stopping dockerd"
    kill "$pid"
    local deadline=$((SECONDS + 60))
    while alive "$pid" && [ $SECONDS -lt $deadline ]; do sleep 0.5; done
    alive "$pid" && kill -9 "$pid"
  fi
  rm -f "$PID_FILE"
  ip link del docker0 2>/dev/null || true
  remove_docker_rules
  if [ -f "${STATE}/forward-policy.before" ]; then
    log "restoring the FORWARD policy and ip_forward"
    iptables -P FORWARD "$(cat "${STATE}/forward-policy.before")"
    cat "${STATE}/ip_forward.before" >/proc/sys/net/ipv4/ip_forward
    rm -f "${STATE}/forward-policy.before" "${STATE}/ip_forward.before"
  fi
}

# remove_docker_rules deletes what dockerd left in iptables once stopped: the rules that
# jump to its chains or name its bridges, then its chains. Restoring a copy of the whole
# tables instead would undo what a running cluster programmed meanwhile.
remove_docker_rules() {
  local table rule chain words
  for table in filter nat; do
    iptables -t "$table" -S | grep -E '^-A .*(-j DOCKER[-A-Z0-9]*|-[io] (docker0|br-[0-9a-f]{12}))( |$)' |
      while read -r rule; do
        # Docker's rules have no quoted argument: splitting on spaces keeps them whole.
        read -ra words <<<"${rule#-A }"
        iptables -t "$table" -D "${words[@]}"
      done
    for chain in $(iptables -t "$table" -S | awk '$1 == "-N" && $2 ~ /^DOCKER/ {print $2}'); do
      iptables -t "$table" -F "$chain"
    done
    for chain in $(iptables -t "$table" -S | awk '$1 == "-N" && $2 ~ /^DOCKER/ {print $2}'); do
      iptables -t "$table" -X "$chain"
    done
  done
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *)
    echo "usage: $0 up|down" >&2
    exit 2
    ;;
esac
