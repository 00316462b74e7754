#!/usr/bin/env bash
# Deletes the kind cluster of the e2e suite, then stops the Docker engine if
# hack/kind/dockerd.sh started it, restoring the host's iptables rules and ip_forward.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
if docker info >/dev/null 2>&1; then
  "${KIND:-${REPO_ROOT}/bin/kind}" delete cluster --name "${KIND_CLUSTER:-logbench-e2e}"
fi
"${REPO_ROOT}/hack/kind/dockerd.sh" down
