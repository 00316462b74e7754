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
	return &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: AgentRoleBindingName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: AgentClusterRole},
		Subjects: []rbacv1.Subject{
			{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: AgentServiceAccountName},
		},
	}
}
