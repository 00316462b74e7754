// Package dashboard checks the Helm chart's Grafana dashboard with Prometheus's own
// PromQL parser. It is a module of its own: Prometheus requires newer Kubernetes
// libraries than the operator's controller-runtime allows.
package dashboard
