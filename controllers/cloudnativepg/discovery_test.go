package cloudnativepg

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	discoveryfake "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

// TestUnavailable: the operator watched a Cluster the API server does not
// serve, or refused one it serves.
func TestUnavailable(t *testing.T) {
	clusters := metav1.APIResource{Name: "clusters", Kind: "Cluster", Namespaced: true}
	for name, tc := range map[string]struct {
		served []*metav1.APIResourceList
		want   string
	}{
		"served": {[]*metav1.APIResourceList{{GroupVersion: "postgresql.cnpg.io/v1",
			APIResources: []metav1.APIResource{{Name: "backups", Kind: "Backup"}, clusters}}}, ""},
		"not installed": {[]*metav1.APIResourceList{{GroupVersion: "batch/v1"}},
			"CloudNativePG is not installed: the API server serves no postgresql.cnpg.io/v1 (CRD clusters.postgresql.cnpg.io)"},
		"another version": {[]*metav1.APIResourceList{{GroupVersion: "postgresql.cnpg.io/v2",
			APIResources: []metav1.APIResource{clusters}}}, "is served at [v2], not at v1"},
		"no Cluster": {[]*metav1.APIResourceList{{GroupVersion: "postgresql.cnpg.io/v1",
			APIResources: []metav1.APIResource{{Name: "backups", Kind: "Backup"}}}}, "without its Cluster kind"},
	} {
		t.Run(name, func(t *testing.T) {
			client := &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{Resources: tc.served}}
			got, err := Unavailable(client)
			if err != nil {
				t.Fatal(err)
			}
			if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if got != "" && !strings.Contains(got, "docs/compatibility.md") {
				t.Errorf("%q does not say what to install", got)
			}
		})
	}
}
