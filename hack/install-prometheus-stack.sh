#!/usr/bin/env bash
# Installs the Prometheus Operator stack the e2e suite scrapes logbench with, set up as
# kube-prometheus-stack sets up a release named kube-prometheus-stack: in namespace
# monitoring, the operator with its CRDs and RBAC from the operator release's own example
# manifests, and a Prometheus that selects ServiceMonitors, PodMonitors and
# PrometheusRules labelled release: kube-prometheus-stack in every namespace (the chart's
# *SelectorNilUsesHelmValues defaults). Only the scrape and evaluation intervals are
# shorter than the chart's 30s, so that the suite waits less.
# Usage: hack/install-prometheus-stack.sh OPERATOR_IMAGE RELOADER_IMAGE PROMETHEUS_IMAGE
#          [--kubeconfig FILE | --kube-context NAME]
#        hack/install-prometheus-stack.sh --crds-only OPERATOR_VERSION [--kubeconfig FILE | --kube-context NAME]
# --crds-only installs the namespace and the operator release's CRDs alone, which charts
# with a ServiceMonitor or PrometheusRule (logbench's) need before the stack runs.
# The images' tags are the releases: the operator's (0.88.0 or v0.88.0) names the module
# whose manifests are applied, Prometheus's (3.16.0 or v3.16.0) the Prometheus version.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/go.sh"

usage() {
  echo "usage: $0 OPERATOR_IMAGE RELOADER_IMAGE PROMETHEUS_IMAGE [--kubeconfig FILE | --kube-context NAME]" >&2
  echo "       $0 --crds-only OPERATOR_VERSION [--kubeconfig FILE | --kube-context NAME]" >&2
  exit 2
}
crds_only=false
if [ "${1:-}" = --crds-only ]; then
  [ $# -ge 2 ] || usage
  crds_only=true operator_version=$2
  shift 2
else
  [ $# -ge 3 ] || usage
  operator_image=$1 reloader_image=$2 prometheus_image=$3
  operator_version=${operator_image##*:}
  shift 3
fi
kubectl_flags=()
while (($#)); do
  case $1 in
    --kubeconfig) kubectl_flags+=(--kubeconfig "$2") ;;
    --kube-context) kubectl_flags+=(--context "$2") ;;
    *)
      echo "$0: unknown flag $1" >&2
      exit 2
      ;;
  esac
  shift 2
done
kubectl_stack() { kubectl "${kubectl_flags[@]}" "$@"; }

RELEASE=kube-prometheus-stack
NAMESPACE=monitoring
operator_version=v${operator_version#v}
module=github.com/prometheus-operator/prometheus-operator
examples=$(go_module_dir "${module}@${operator_version}")/example
[ -d "$examples" ] || die "no example manifests in ${module}@${operator_version}"

kubectl_stack create namespace "$NAMESPACE" --dry-run=client -o yaml | kubectl_stack apply -f - >/dev/null
# The CRDs are too large for a client-side apply's last-applied annotation.
kubectl_stack apply --server-side --force-conflicts -f "${examples}/prometheus-operator-crd" >/dev/null
# kubectl wait fails at once on an object whose status holds no condition yet (a CRD or
# Prometheus just created): poll instead.
# wait_condition OBJECT TYPE SECONDS waits until OBJECT's condition TYPE is True.
wait_condition() {
  local object=$1 type=$2 deadline=$((SECONDS + $3))
  # An object without conditions yet makes the filter fail: that is "not yet", quietly.
  until [ "$(kubectl_stack -n "$NAMESPACE" get "$object" \
    -o jsonpath="{.status.conditions[?(@.type==\"${type}\")].status}" 2>/dev/null)" = True ]; do
    if ((SECONDS >= deadline)); then
      kubectl_stack -n "$NAMESPACE" get "$object" -o yaml >&2
      kubectl_stack -n "$NAMESPACE" get pods,events >&2
      echo "$0: ${object} was not ${type} within $3 s" >&2
      exit 1
    fi
    sleep 2
  done
}
for crd in servicemonitors prometheusrules prometheuses; do
  wait_condition "crd/${crd}.monitoring.coreos.com" Established 60
done
$crds_only && exit 0
prometheus_version=${prometheus_image##*:}
prometheus_version=v${prometheus_version#v}

# The example manifests install into namespace default and pull the upstream images.
for file in service-account cluster-role cluster-role-binding deployment service; do
  cat "${examples}/rbac/prometheus-operator/prometheus-operator-${file}.yaml"
  echo ---
done | sed -e "s#namespace: default#namespace: ${NAMESPACE}#" \
  -e "s#quay.io/prometheus-operator/prometheus-operator:${operator_version}#${operator_image}#" \
  -e "s#quay.io/prometheus-operator/prometheus-config-reloader:${operator_version}#${reloader_image}#" |
  kubectl_stack -n "$NAMESPACE" apply --server-side --force-conflicts -f - >/dev/null
for file in service-account cluster-role cluster-role-binding; do
  cat "${examples}/rbac/prometheus/prometheus-${file}.yaml"
  echo ---
done | sed -e "s#namespace: default#namespace: ${NAMESPACE}#" |
  kubectl_stack -n "$NAMESPACE" apply --server-side -f - >/dev/null
kubectl_stack -n "$NAMESPACE" rollout status deployment/prometheus-operator --timeout=180s >/dev/null

kubectl_stack apply --server-side -f - >/dev/null <<EOF
apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata:
  name: ${RELEASE}-prometheus
  namespace: ${NAMESPACE}
  labels:
    release: ${RELEASE}
spec:
  image: ${prometheus_image}
  version: ${prometheus_version}
  replicas: 1
  serviceAccountName: prometheus
  serviceMonitorSelector:
    matchLabels:
      release: ${RELEASE}
  serviceMonitorNamespaceSelector: {}
  podMonitorSelector:
    matchLabels:
      release: ${RELEASE}
  podMonitorNamespaceSelector: {}
  ruleSelector:
    matchLabels:
      release: ${RELEASE}
  ruleNamespaceSelector: {}
  scrapeInterval: 5s
  evaluationInterval: 5s
  retention: 1d
EOF
wait_condition "prometheus/${RELEASE}-prometheus" Available 300
