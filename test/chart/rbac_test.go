package chart_test

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// reviewedRules are the rules of the ClusterRoles the chart renders, as reviewed for
// docs/security.md: a change to what the operator or the agent may do fails this test
// until the list, and the review, follow.
var reviewedRules = map[string][]rbacv1.PolicyRule{
	"logbench-manager": {
		// Shipper configurations and Jobs: RBAC cannot narrow these to the operator's own
		// objects, hence the namespaced install (watchNamespaces) docs/security.md advises.
		// Watched, metadata only and only those labelled as a benchmark's, so that one
		// deleted mid-benchmark is created again.
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create", "delete", "get", "list", "patch", "watch"}},
		// Events and volume claims tell why a destination's cluster is not ready, and so
		// do the logs of its crashed containers (PostgreSQL refusing its configuration).
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "list", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"persistentvolumeclaims", "pods"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"serviceaccounts"}, Verbs: []string{"create", "get", "patch"}},
		// The receivers of forwarding Syslog destinations, watched as the ConfigMaps are.
		{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"create", "delete", "get", "list", "watch"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"create", "delete", "get", "list", "watch"}},
		{APIGroups: []string{"batch"}, Resources: []string{"jobs"}, Verbs: []string{"get", "list", "patch", "watch"}},
		// Each finished run's record, written once, never changed; deleted with its benchmark.
		{APIGroups: []string{"bench.logbench.io"}, Resources: []string{"loggingbenchmarkruns"}, Verbs: []string{"create", "get", "list", "watch"}},
		{APIGroups: []string{"bench.logbench.io"}, Resources: []string{"loggingbenchmarks"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"bench.logbench.io"}, Resources: []string{"loggingbenchmarks/status"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}, Verbs: []string{"create", "get", "list", "patch", "watch"}},
		{APIGroups: []string{"postgresql.cnpg.io"}, Resources: []string{"clusters"}, Verbs: []string{"create", "delete", "get", "list", "watch"}},
		{APIGroups: []string{"rbac.authorization.k8s.io"}, ResourceNames: []string{"logbench-agent", "logbench-runner"}, Resources: []string{"clusterroles"}, Verbs: []string{"bind"}},
		{APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"rolebindings"}, Verbs: []string{"create", "get", "patch"}},
	},
	// Reviews of the metrics clients' tokens and rights (kubebuilder's metrics_auth_role).
	"logbench-metrics-auth": {
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
	},
	"logbench-agent": {
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
	},
	"logbench-runner": {
		{APIGroups: []string{"bench.logbench.io"}, Resources: []string{"loggingbenchmarks"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"bench.logbench.io"}, Resources: []string{"loggingbenchmarkruns"}, Verbs: []string{"get", "list", "watch", "create"}},
	},
}

// TestClusterRolesGrantTheReviewedRules holds the rendered rules of the operator and of
// the agent and the runners equal to reviewedRules.
func TestClusterRolesGrantTheReviewedRules(t *testing.T) {
	rendered := renderedClusterRoles(t)
	for name, want := range reviewedRules {
		role, found := rendered[name]
		if !found {
			t.Errorf("the chart renders no ClusterRole %s", name)
			continue
		}
		if !equality.Semantic.DeepEqual(role.Rules, want) {
			t.Errorf("ClusterRole %s grants rules that were not reviewed:\nrendered: %+v\nreviewed: %+v",
				name, role.Rules, want)
		}
	}
}
