#!/usr/bin/env bash
# Installs or upgrades logbench with its Helm chart for the e2e suite, as users install
# it; the e2e cluster providers differ only in the image and the cluster they point Helm
# at.
# Usage: hack/install-logbench.sh IMAGE [--kubeconfig FILE | --kube-context NAME]
#          [--prometheus-release NAME] [--chart DIR]
# --chart installs the chart in DIR (the upgrade spec's earlier release) instead of this
# tree's.
# With --prometheus-release, the chart's ServiceMonitor and PrometheusRule are enabled and
# labelled release: NAME, as docs/prometheus.md tells kube-prometheus-stack users to install it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
[ $# -ge 1 ] || {
  echo "usage: $0 IMAGE [--kubeconfig FILE | --kube-context NAME]" >&2
  exit 2
}
image=$1
shift
helm_flags=()
[[ $image == *:* ]] || {
  echo "$0: IMAGE must be REPOSITORY:TAG, got ${image}" >&2
  exit 2
}

# The operator watches only the e2e suite's namespace, with a Role there: the least
# privilege the chart offers (watchNamespaces), which the suite thus proves is enough.
# The namespace must exist before its Role; kubectl talks to the cluster Helm does.
E2E_NAMESPACE=logbench-e2e
kubectl_flags=()
monitoring=()
chart=${REPO_ROOT}/charts/logbench
while (($#)); do
  case $1 in
    --kubeconfig)
      kubectl_flags+=(--kubeconfig "$2")
      helm_flags+=("$1" "$2")
      ;;
    --kube-context)
      kubectl_flags+=(--context "$2")
      helm_flags+=("$1" "$2")
      ;;
    --prometheus-release)
      monitoring=(--set serviceMonitor.enabled=true --set-string "serviceMonitor.labels.release=$2"
        --set prometheusRule.enabled=true --set-string "prometheusRule.labels.release=$2")
      ;;
    --chart) chart=$2 ;;
    *)
      echo "$0: unknown flag $1" >&2
      exit 2
      ;;
  esac
  shift 2
done
# The suite's images are built here as logbench.local/...: the admission policy allows
# them beside the chart's defaults (helm --set replaces the whole list).
allowed_images="ghcr.io/cloudnative-pg/,cr.fluentbit.io/fluent/,otel/opentelemetry-collector-contrib:,ghcr.io/logbench/,logbench.local/"
# Benchmarks may use config/samples/production.yaml's node pool, as docs/installation.md
# allows it: the admission spec's positive control places a benchmark there (a dry run;
# the suite's clusters have no such pool).
placement=(
  --set "placement.allowedTolerations[0].key=dedicated" --set "placement.allowedTolerations[0].operator=Equal"
  --set "placement.allowedTolerations[0].value=databases" --set "placement.allowedTolerations[0].effect=NoSchedule"
  --set "placement.allowedNodeSelectors[0]=node-pool=databases"
)
kubectl "${kubectl_flags[@]}" create namespace "$E2E_NAMESPACE" --dry-run=client -o yaml |
  kubectl "${kubectl_flags[@]}" apply -f - >/dev/null

(cd "$REPO_ROOT" && make --no-print-directory helm >/dev/null)
# Helm installs the chart's crds/ on the first install only: an upgrade needs the new
# schema applied first.
kubectl "${kubectl_flags[@]}" apply --server-side --force-conflicts -f "${chart}/crds/" >/dev/null
"${REPO_ROOT}/bin/helm" upgrade --install logbench "$chart" "${helm_flags[@]}" \
  --namespace logbench-system --create-namespace \
  --set-string "image.repository=${image%:*}" --set-string "image.tag=${image##*:}" \
  --set "watchNamespaces={${E2E_NAMESPACE}}" --set "allowedImages={${allowed_images}}" "${placement[@]}" \
  "${monitoring[@]}" \
  --wait --timeout 5m >/dev/null
# The operator serves its metrics to authorized clients only: the suite's Prometheus
# (hack/install-prometheus-stack.sh runs it as monitoring/prometheus) may read them.
if ((${#monitoring[@]})); then
  kubectl "${kubectl_flags[@]}" create clusterrolebinding logbench-metrics-reader-prometheus \
    --clusterrole=logbench-metrics-reader --serviceaccount=monitoring:prometheus --dry-run=client -o yaml |
    kubectl "${kubectl_flags[@]}" apply -f - >/dev/null
fi
