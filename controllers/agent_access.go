package controllers

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
)

// reconcileAgentAccess ensures the ServiceAccount the agent pods run as, bound in the
// benchmark's namespace to builders.AgentClusterRole.
//
// The two objects are shared by the benchmarks of a namespace, each of which adds
// itself as a non-controller owner: the garbage collector deletes them with the last
// benchmark, and deleting one benchmark never takes them from another still running. An
// object of the same name that no benchmark owns is not adopted (foreignObjectError).
func (r *LoggingBenchmarkReconciler) reconcileAgentAccess(
	ctx context.Context,
	benchmark *v1alpha1.LoggingBenchmark,
) error {
	wantBinding := builders.AgentRoleBinding(benchmark.Namespace)
	account := builders.AgentServiceAccount(benchmark.Namespace)
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: wantBinding.Namespace, Name: wantBinding.Name}}
	mutations := []struct {
		object client.Object
		mutate func()
	}{
		{account, func() {}},
		{binding, func() {
			binding.RoleRef = wantBinding.RoleRef
			binding.Subjects = wantBinding.Subjects
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
