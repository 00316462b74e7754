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

const (
	// AgentClusterRole is the fixed ClusterRole the chart and config/rbac ship for the
	// agent: reading the pods of a namespace and their logs (Stdout destinations count
	// records in the instance's container log). The operator binds it in a benchmark's
	// namespace with the bind verb on this name alone, and so never holds what it grants.
	AgentClusterRole = "logbench-agent"
	// agentRoleBinding binds AgentClusterRole to AgentServiceAccount; its name differs from
	// the Role binding of earlier versions, whose roleRef cannot change.
	agentRoleBinding = "logbench-agent-pods"
)

// reconcileAgentAccess ensures the ServiceAccount the agent pods run as, bound in the
// benchmark's namespace to AgentClusterRole.
//
// The two objects are shared by the benchmarks of a namespace, each of which adds
// itself as a non-controller owner: the garbage collector deletes them with the last
// benchmark, and deleting one benchmark never takes them from another still running. An
// object of the same name that no benchmark owns is not adopted (foreignObjectError).
func (r *LoggingBenchmarkReconciler) reconcileAgentAccess(
	ctx context.Context,
	benchmark *v1alpha1.LoggingBenchmark,
) error {
	named := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: benchmark.Namespace, Name: name}
	}
	account := &corev1.ServiceAccount{ObjectMeta: named(AgentServiceAccount)}
	binding := &rbacv1.RoleBinding{ObjectMeta: named(agentRoleBinding)}
	mutations := []struct {
		object client.Object
		mutate func()
	}{
		{account, func() {}},
		{binding, func() {
			binding.RoleRef = rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: AgentClusterRole}
			binding.Subjects = []rbacv1.Subject{
				{Kind: rbacv1.ServiceAccountKind, Namespace: account.Namespace, Name: account.Name},
			}
		}},
	}
	for _, m := range mutations {
		_, err := controllerutil.CreateOrPatch(ctx, r.Client, m.object, func() error {
			if err := refuseAdoption(m.object, benchmark, false); err != nil {
				return err
			}
			m.mutate()
			return controllerutil.SetOwnerReference(benchmark, m.object, r.Scheme)
		})
		if err != nil {
			return fmt.Errorf("ensuring the agent's %T %s: %w", m.object, m.object.GetName(), err)
		}
	}
	return nil
}
