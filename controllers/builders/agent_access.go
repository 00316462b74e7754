package builders

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// AgentServiceAccountName runs the agent pods; it may read the instance pods' logs.
	AgentServiceAccountName = "logbench-agent"
	// AgentClusterRole is the fixed ClusterRole the chart and config/rbac ship for the
	// agent: reading the pods of a namespace and their logs (Stdout destinations count
	// records in the instance's container log). The operator binds it in a benchmark's
	// namespace with the bind verb on this name alone, and so never holds what it grants.
	AgentClusterRole = "logbench-agent"
	// AgentRoleBindingName binds AgentClusterRole to AgentServiceAccountName; it differs
	// from the name of the Role binding of earlier versions, whose roleRef cannot change.
	AgentRoleBindingName = "logbench-agent-pods"
	// RunnerClusterRole is the fixed ClusterRole the chart and config/rbac ship for the
	// runners: watching the benchmarks of a namespace and creating their run records.
	// The operator binds it as it binds AgentClusterRole.
	RunnerClusterRole = "logbench-runner"
	// RunnerRoleBindingName binds RunnerClusterRole to AgentServiceAccountName.
	RunnerRoleBindingName = "logbench-runner"
)

// AgentServiceAccount returns the ServiceAccount the agent pods of a namespace run as,
// without owner reference: the benchmarks of the namespace share it.
func AgentServiceAccount(namespace string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: AgentServiceAccountName}}
}

// AgentRoleBinding returns the RoleBinding of AgentClusterRole to the agent's
// ServiceAccount in a namespace, without owner reference: the benchmarks of the
// namespace share it.
func AgentRoleBinding(namespace string) *rbacv1.RoleBinding {
	return agentBinding(namespace, AgentRoleBindingName, AgentClusterRole)
}

// RunnerRoleBinding returns the RoleBinding of RunnerClusterRole to the agent's
// ServiceAccount in a namespace, without owner reference: the benchmarks of the
// namespace share it.
func RunnerRoleBinding(namespace string) *rbacv1.RoleBinding {
	return agentBinding(namespace, RunnerRoleBindingName, RunnerClusterRole)
}

// agentBinding binds a ClusterRole to the agent's ServiceAccount in a namespace.
func agentBinding(namespace, name, clusterRole string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects: []rbacv1.Subject{
			{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: AgentServiceAccountName},
		},
	}
}
