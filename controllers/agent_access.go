package controllers

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/builders"
)

// reconcileAgentAccess ensures the ServiceAccount the runner pods run as, bound in the
// benchmark's namespace to builders.AgentClusterRole and builders.RunnerClusterRole.
//
// The two objects are shared by the benchmarks of a namespace, each of which adds
// itself as a non-controller owner: the garbage collector deletes them with the last
// benchmark, and deleting one benchmark never takes them from another still running. An
// object of the same name that no benchmark owns is not adopted (foreignObjectError).
func (r *LoggingBenchmarkReconciler) reconcileAgentAccess(
	ctx context.Context,
	benchmark *v1alpha1.LoggingBenchmark,
) error {
	_, err := ensureOwned(ctx, r, benchmark, builders.AgentServiceAccount(benchmark.Namespace), sharedBy, nil)
	if err != nil {
		return err
	}
	for _, binding := range []*rbacv1.RoleBinding{
		builders.AgentRoleBinding(benchmark.Namespace), builders.RunnerRoleBinding(benchmark.Namespace),
	} {
		_, err = ensureOwned(ctx, r, benchmark, binding, sharedBy, func(existing, want *rbacv1.RoleBinding) {
			existing.RoleRef, existing.Subjects = want.RoleRef, want.Subjects
		})
		if err != nil {
			return err
		}
	}
	return nil
}
