// Package cloudnativepg holds what logbench knows of CloudNativePG: its Cluster as
// unstructured data with mirrors of the fields logbench sets, the labels and ports of its
// instance pods, how to read a Cluster's readiness, and the release all of these follow.
// logbench does not import CloudNativePG's Go module, to stay clear of its API churn.
package cloudnativepg

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Version is the CloudNativePG release whose API the mirrors below follow and whose CRDs
// the tests install.
const Version = "v1.30.0"

// MaxClusterNameLength is CloudNativePG's limit on a Cluster's name: it derives longer
// names (services, pods, jobs) from it.
const MaxClusterNameLength = 50

// ClusterGVK is CloudNativePG's Cluster.
var ClusterGVK = schema.GroupVersionKind{Group: "postgresql.cnpg.io", Version: "v1", Kind: "Cluster"}

// NewCluster returns an empty CloudNativePG Cluster to read into.
func NewCluster() *unstructured.Unstructured {
	cluster := &unstructured.Unstructured{}
	cluster.SetGroupVersionKind(ClusterGVK)
	return cluster
}

// ClusterSpec mirrors the fields of CloudNativePG's ClusterSpec (api/v1
// cluster_types.go) that logbench sets.
type ClusterSpec struct {
	Instances             int32                       `json:"instances"`
	ImageName             string                      `json:"imageName,omitempty"`
	EnableSuperuserAccess bool                        `json:"enableSuperuserAccess"`
	PostgreSQL            PostgresConfiguration       `json:"postgresql"`
	Storage               StorageConfiguration        `json:"storage"`
	Resources             corev1.ResourceRequirements `json:"resources,omitempty"`
	Affinity              AffinityConfiguration       `json:"affinity,omitempty"`
	// LogLevel of the instance manager, which samples the csvlog records it prints at
	// info and above up to 1.30.0.
	LogLevel         string                 `json:"logLevel,omitempty"`
	ImagePullSecrets []LocalObjectReference `json:"imagePullSecrets,omitempty"`
	// InheritedMetadata is put on every object CloudNativePG creates for the cluster.
	InheritedMetadata EmbeddedObjectMetadata `json:"inheritedMetadata"`
	// Probes are served from 1.24.2 and 1.25.0 on.
	Probes *ProbesConfiguration `json:"probes,omitempty"`
}

// ProbesConfiguration is CloudNativePG's ProbesConfiguration: what it changes of the
// instance pods' probes.
type ProbesConfiguration struct {
	Startup *Probe `json:"startup,omitempty"`
}

// Probe is the part of CloudNativePG's ProbeWithStrategy logbench sets; CloudNativePG
// keeps its defaults for the rest, and derives the startup probe's failure threshold
// from spec.startDelay and the period.
type Probe struct {
	PeriodSeconds int32 `json:"periodSeconds,omitempty"`
}

// EmbeddedObjectMetadata is CloudNativePG's EmbeddedObjectMetadata.
type EmbeddedObjectMetadata struct {
	Labels map[string]string `json:"labels,omitempty"`
}

// LocalObjectReference is CloudNativePG's LocalObjectReference (machinery's pkg/api),
// whose name is required.
type LocalObjectReference struct {
	Name string `json:"name"`
}

// PostgresConfiguration is CloudNativePG's PostgresConfiguration.
type PostgresConfiguration struct {
	Parameters map[string]string `json:"parameters,omitempty"`
	// SharedPreloadLibraries come before those CloudNativePG adds for the parameters'
	// namespaces, and a library listed twice keeps its first place.
	SharedPreloadLibraries []string                 `json:"shared_preload_libraries,omitempty"`
	EnableAlterSystem      bool                     `json:"enableAlterSystem,omitempty"`
	Extensions             []ExtensionConfiguration `json:"extensions,omitempty"`
}

// ExtensionConfiguration is CloudNativePG's ExtensionConfiguration: an image mounted as a
// volume at /extensions/<name>, whose /share and /lib CloudNativePG appends to
// extension_control_path and dynamic_library_path.
type ExtensionConfiguration struct {
	Name  string                   `json:"name"`
	Image corev1.ImageVolumeSource `json:"image"`
}

// ManagedLibraries are the libraries CloudNativePG preloads when a parameter of their
// namespace (the library's name, then a dot) is set, in its order
// (pkg/postgres/configuration.go ManagedExtensions).
var ManagedLibraries = []string{"pgaudit", "pg_stat_statements", "auto_explain", "pg_failover_slots"}

// StorageConfiguration is CloudNativePG's StorageConfiguration.
type StorageConfiguration struct {
	Size         string  `json:"size,omitempty"`
	StorageClass *string `json:"storageClass,omitempty"`
}

// AffinityConfiguration is CloudNativePG's AffinityConfiguration.
type AffinityConfiguration struct {
	NodeSelector              map[string]string       `json:"nodeSelector,omitempty"`
	NodeAffinity              *corev1.NodeAffinity    `json:"nodeAffinity,omitempty"`
	Tolerations               []corev1.Toleration     `json:"tolerations,omitempty"`
	AdditionalPodAntiAffinity *corev1.PodAntiAffinity `json:"additionalPodAntiAffinity,omitempty"`
	AdditionalPodAffinity     *corev1.PodAffinity     `json:"additionalPodAffinity,omitempty"`
}
