#!/usr/bin/env bash
# Installs or upgrades logbench with its Helm chart, as users install it; the e2e cluster
# providers differ only in the image and the cluster they point Helm at.
# Usage: hack/install-logbench.sh IMAGE [HELM_FLAG...]
#   IMAGE is REPOSITORY:TAG; extra flags (--kubeconfig, --kube-context) go to Helm.
set -euo pipefail

REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ $# -ge 1 ] || { echo "usage: $0 IMAGE [HELM_FLAG...]" >&2; exit 2; }
image=$1
shift
[[ $image == *:* ]] || { echo "$0: IMAGE must be REPOSITORY:TAG, got ${image}" >&2; exit 2; }

(cd "$REPO_ROOT" && make --no-print-directory helm >/dev/null)
"${REPO_ROOT}/bin/helm" upgrade --install logbench "${REPO_ROOT}/charts/logbench" "$@" \
  --namespace logbench-system --create-namespace \
  --set-string "image.repository=${image%:*}" --set-string "image.tag=${image##*:}" \
  --wait --timeout 5m >/dev/null
