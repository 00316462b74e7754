#!/usr/bin/env bash
# Deletes the kind cluster of the e2e suite, then stops the Docker engine if
# hack/kind/dockerd.sh started it, restoring the host's iptables rules and ip_forward.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if docker_answers; then
  "$KIND" delete cluster --name "$KIND_CLUSTER"
fi
"${REPO_ROOT}/hack/kind/dockerd.sh" down
