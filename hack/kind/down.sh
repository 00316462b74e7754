#!/usr/bin/env bash
# Deletes the kind cluster of the e2e suite.
set -euo pipefail
REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
"${KIND:-${REPO_ROOT}/bin/kind}" delete cluster --name "${KIND_CLUSTER:-logbench-e2e}"
