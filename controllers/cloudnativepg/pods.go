package cloudnativepg

// Labels CloudNativePG puts on instance pods (pkg/utils/labels_annotations.go).
const (
	ClusterLabel      = "cnpg.io/cluster"
	InstanceRoleLabel = "cnpg.io/instanceRole"
	PrimaryRole       = "primary"
	// PodRoleLabel tells instance pods from the Jobs' pods (initdb, join), which carry
	// the cluster label too.
	PodRoleLabel = "cnpg.io/podRole"
	InstanceRole = "instance"
)

// Ports CloudNativePG's instance pods serve.
const (
	PostgresPort int32 = 5432
	// InstanceManagerPort is the instance manager's status endpoint, which the operator
	// and the other instances call.
	InstanceManagerPort int32 = 8000
	// MetricsPort is the instance manager's metrics exporter.
	MetricsPort int32 = 9187
)

// PrimaryPodLabels select the primary instance pod of a cluster.
func PrimaryPodLabels(cluster string) map[string]string {
	return map[string]string{ClusterLabel: cluster, InstanceRoleLabel: PrimaryRole}
}
