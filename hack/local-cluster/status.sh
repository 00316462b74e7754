#!/usr/bin/env bash
# Prints whether each process of the local cluster runs, every node's too, then the nodes
# and the pods.
# Exits non-zero when a process is down or the API server does not answer.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

healthy=true
names=("${COMPONENTS[@]}")
for node in $(extra_nodes); do
  use_node "$node"
  names+=("${NODE_COMPONENTS[@]/%/${node_suffix}}")
done
for name in "${names[@]}"; do
  if running "$name"; then
    printf '%-24s running (pid %s)\n' "$name" "$(cat "$(pid_file "$name")")"
  else
    printf '%-24s stopped\n' "$name"
    healthy=false
  fi
done
if kubectl_local get --raw /readyz >/dev/null 2>&1; then
  echo
  kubectl_local get nodes -o wide
  echo
  kubectl_local get pods -A -o wide
else
  echo "API server not answering at https://${NODE_IP}:${API_PORT}"
  healthy=false
fi
[ "$healthy" = true ]
