package chart_test

import (
	"testing"
)

// TestNetworkPeersRendered checks that the operator receives the peers the NetworkPolicy
// of a benchmark's PostgreSQL pods admits: CloudNativePG's operator as its manifest
// installs it by default, as the values say otherwise, and a metrics scraper only when
// one is named.
func TestNetworkPeersRendered(t *testing.T) {
	const (
		namespaceFlag        = "--cloudnative-pg-namespace"
		labelsFlag           = "--cloudnative-pg-pod-labels"
		scraperNamespaceFlag = "--instance-metrics-scraper-namespace"
		scraperLabelsFlag    = "--instance-metrics-scraper-pod-labels"
	)
	tests := []struct {
		name string
		set  []string
		want map[string]string
	}{
		{name: "defaults", want: map[string]string{
			namespaceFlag: "cnpg-system", labelsFlag: "app.kubernetes.io/name=cloudnative-pg",
			scraperNamespaceFlag: "<missing>", scraperLabelsFlag: "<missing>",
		}},
		{name: "CloudNativePG elsewhere, every pod of its namespace", set: []string{
			"networkPolicy.cloudNativePG.namespace=postgres-operator", "networkPolicy.cloudNativePG.podLabels=null",
		}, want: map[string]string{
			namespaceFlag: "postgres-operator", labelsFlag: "",
			scraperNamespaceFlag: "<missing>", scraperLabelsFlag: "<missing>",
		}},
		{name: "a scraper", set: []string{
			"networkPolicy.metricsScraper.namespace=monitoring",
			`networkPolicy.metricsScraper.podLabels.app\.kubernetes\.io/name=prometheus`,
			"networkPolicy.metricsScraper.podLabels.release=stack",
		}, want: map[string]string{
			namespaceFlag: "cnpg-system", labelsFlag: "app.kubernetes.io/name=cloudnative-pg",
			scraperNamespaceFlag: "monitoring", scraperLabelsFlag: "app.kubernetes.io/name=prometheus,release=stack",
		}},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			args := toDeployment(t, findDeployment(t, render(t, test.set))).Spec.Template.Spec.Containers[0].Args
			for flag, want := range test.want {
				if got := flagValue(args, flag); got != want {
					t.Errorf("%s=%s, want %s", flag, got, want)
				}
			}
		})
	}
}
