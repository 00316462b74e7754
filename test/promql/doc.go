// Package promql checks the Helm chart's Grafana dashboard and alert rules with
// Prometheus's own PromQL parser and engine. It is a module of its own: Prometheus
// requires newer Kubernetes libraries than the operator's controller-runtime allows.
package promql
