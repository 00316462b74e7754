package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/logbench/logbench/api/v1alpha1"
)

// reconcileAgentAccess ensures the ServiceAccount the agent pods run as, allowed to read
// the pods of the namespace and their logs (Stdout destinations count records in the
// instance's container log).
//
// The three objects are shared by the benchmarks of a namespace, each of which adds
// itself as a non-controller owner: the garbage collector deletes them with the last
// benchmark, and deleting one benchmark never takes them from another still running.
func (r *LoggingBenchmarkReconciler) reconcileAgentAccess(
	ctx context.Context,
	benchmark *v1alpha1.LoggingBenchmark,
) error {
	meta := metav1.ObjectMeta{Namespace: benchmark.Namespace, Name: AgentServiceAccount}
	account := &corev1.ServiceAccount{ObjectMeta: meta}
	role := &rbacv1.Role{ObjectMeta: meta}
	binding := &rbacv1.RoleBinding{ObjectMeta: meta}
	mutations := []struct {
		object client.Object
		mutate func()
	}{
		{account, func() {}},
		{role, func() {
			role.Rules = []rbacv1.PolicyRule{
				{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}},
				{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
			}
		}},
		{binding, func() {
			binding.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}
			binding.Subjects = []rbacv1.Subject{
				{Kind: rbacv1.ServiceAccountKind, Namespace: account.Namespace, Name: account.Name},
			}
		}},
	}
	for _, m := range mutations {
		_, err := controllerutil.CreateOrPatch(ctx, r.Client, m.object, func() error {
			m.mutate()
			return controllerutil.SetOwnerReference(benchmark, m.object, r.Scheme)
		})
		if err != nil {
			return fmt.Errorf("ensuring the agent's %T %s: %w", m.object, AgentServiceAccount, err)
		}
	}
	return nil
}
