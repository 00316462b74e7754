package controllers

import (
	"encoding/json"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/meter"
	"github.com/logbench/logbench/internal/shipping"
)

// ClusterGVK is CloudNativePG's Cluster. logbench handles it as unstructured data so that
// it does not depend on CloudNativePG's Go module and its API churn.
var ClusterGVK = schema.GroupVersionKind{Group: "postgresql.cnpg.io", Version: "v1", Kind: "Cluster"}

// clusterPhaseHealthy is CloudNativePG's status.phase of a cluster doing nothing.
const clusterPhaseHealthy = "Cluster in healthy state"

// Labels CloudNativePG puts on instance pods (pkg/utils/labels_annotations.go, v1.30.0).
const (
	cnpgClusterLabel      = "cnpg.io/cluster"
	cnpgInstanceRoleLabel = "cnpg.io/instanceRole"
	cnpgPrimaryRole       = "primary"
)

// primaryPodLabels select the primary instance pod of a cluster.
func primaryPodLabels(cluster string) map[string]string {
	return map[string]string{cnpgClusterLabel: cluster, cnpgInstanceRoleLabel: cnpgPrimaryRole}
}

// NewClusterObject returns an empty CloudNativePG Cluster to read into.
func NewClusterObject() *unstructured.Unstructured {
	cluster := &unstructured.Unstructured{}
	cluster.SetGroupVersionKind(ClusterGVK)
	return cluster
}

// cnpgClusterSpec mirrors the fields of CloudNativePG's ClusterSpec (api/v1
// cluster_types.go, v1.30.0) that logbench sets.
type cnpgClusterSpec struct {
	Instances             int32                       `json:"instances"`
	ImageName             string                      `json:"imageName,omitempty"`
	EnableSuperuserAccess bool                        `json:"enableSuperuserAccess"`
	PostgreSQL            cnpgPostgresConfiguration   `json:"postgresql"`
	Storage               cnpgStorageConfiguration    `json:"storage"`
	Resources             corev1.ResourceRequirements `json:"resources,omitempty"`
	Affinity              cnpgAffinityConfiguration   `json:"affinity,omitempty"`
	// LogLevel of the instance manager, which samples the csvlog records it prints at
	// info and above up to 1.30.0.
	LogLevel         string                     `json:"logLevel,omitempty"`
	ImagePullSecrets []cnpgLocalObjectReference `json:"imagePullSecrets,omitempty"`
	// InheritedMetadata is put on every object CloudNativePG creates for the cluster.
	InheritedMetadata cnpgEmbeddedObjectMetadata `json:"inheritedMetadata"`
}

// cnpgEmbeddedObjectMetadata is CloudNativePG's EmbeddedObjectMetadata.
type cnpgEmbeddedObjectMetadata struct {
	Labels map[string]string `json:"labels,omitempty"`
}

// cnpgLocalObjectReference is CloudNativePG's LocalObjectReference (machinery's
// pkg/api), whose name is required.
type cnpgLocalObjectReference struct {
	Name string `json:"name"`
}

type cnpgPostgresConfiguration struct {
	Parameters map[string]string `json:"parameters,omitempty"`
	// SharedPreloadLibraries come before those CloudNativePG adds for the parameters'
	// namespaces, and a library listed twice keeps its first place.
	SharedPreloadLibraries []string                     `json:"shared_preload_libraries,omitempty"`
	EnableAlterSystem      bool                         `json:"enableAlterSystem,omitempty"`
	Extensions             []cnpgExtensionConfiguration `json:"extensions,omitempty"`
}

// cnpgExtensionConfiguration is CloudNativePG's ExtensionConfiguration: an image mounted
// as a volume at /extensions/<name>, whose /share and /lib CloudNativePG appends to
// extension_control_path and dynamic_library_path.
type cnpgExtensionConfiguration struct {
	Name  string                   `json:"name"`
	Image corev1.ImageVolumeSource `json:"image"`
}

// cnpgManagedLibraries are the libraries CloudNativePG preloads when a parameter of
// their namespace (the library's name, then a dot) is set, in its order
// (pkg/postgres/configuration.go ManagedExtensions, v1.30.0).
var cnpgManagedLibraries = []string{"pgaudit", "pg_stat_statements", "auto_explain", "pg_failover_slots"}

// counterExtensionVolume names the counter's image volume; CloudNativePG's extension
// names are DNS labels, without the underscore of the library's name.
const counterExtensionVolume = "logbench-counter"

// counterConfiguration adds the logbench_counter extension to a cluster's PostgreSQL
// configuration. The counter must be the last library to install its log hook, to count
// only what the others let through (logbench_counter/README.md): CloudNativePG puts
// the libraries of a Cluster's list first and its managed ones after, so the list
// names the managed ones the parameters load, in CloudNativePG's order, then the counter.
func counterConfiguration(config *cnpgPostgresConfiguration, counter *v1alpha1.CounterSpec) {
	if counter == nil {
		return
	}
	for _, library := range cnpgManagedLibraries {
		for name := range config.Parameters {
			if strings.HasPrefix(name, library+".") {
				config.SharedPreloadLibraries = append(config.SharedPreloadLibraries, library)
				break
			}
		}
	}
	config.SharedPreloadLibraries = append(config.SharedPreloadLibraries, v1alpha1.CounterExtension)
	if counter.Source == v1alpha1.CounterInExtensionImage {
		config.Extensions = []cnpgExtensionConfiguration{{
			Name:  counterExtensionVolume,
			Image: corev1.ImageVolumeSource{Reference: counter.ExtensionImage},
		}}
	}
}

type cnpgStorageConfiguration struct {
	Size         string  `json:"size,omitempty"`
	StorageClass *string `json:"storageClass,omitempty"`
}

type cnpgAffinityConfiguration struct {
	NodeSelector              map[string]string       `json:"nodeSelector,omitempty"`
	NodeAffinity              *corev1.NodeAffinity    `json:"nodeAffinity,omitempty"`
	Tolerations               []corev1.Toleration     `json:"tolerations,omitempty"`
	AdditionalPodAntiAffinity *corev1.PodAntiAffinity `json:"additionalPodAntiAffinity,omitempty"`
	AdditionalPodAffinity     *corev1.PodAffinity     `json:"additionalPodAffinity,omitempty"`
}

// buildCluster returns the CloudNativePG Cluster serving one destination, without owner
// reference; its instance pods get the meter from meterImage, none when it is empty, an
// Rsyslog receiver that names no image rsyslogImage (empty: shipping.RsyslogImage), and
// pull their images, the sidecars' included, with pullSecrets.
func buildCluster(
	benchmark *v1alpha1.LoggingBenchmark, dest v1alpha1.Destination, meterImage string,
	pullSecrets []corev1.LocalObjectReference, rsyslogImage string,
) (*unstructured.Unstructured, error) {
	pg := benchmark.Spec.Postgres
	spec := cnpgClusterSpec{
		Instances: pg.Instances,
		ImageName: pg.ImageName,
		// The agent connects as the superuser: it changes the logging settings and reads
		// the server's counters.
		EnableSuperuserAccess: true,
		PostgreSQL: cnpgPostgresConfiguration{
			Parameters: benchmark.Spec.ServerParameters(dest),
			// CloudNativePG rejects log_destination and the other destination settings as
			// parameters, so the agent applies them with ALTER SYSTEM; shipping
			// destinations too, to write the file their sidecar reads.
			EnableAlterSystem: dest.Type != v1alpha1.DestinationNone,
		},
		Storage:   cnpgStorageConfiguration{StorageClass: pg.Storage.StorageClass},
		Resources: pg.Resources,
		LogLevel:  string(pg.InstanceManagerLogLevel),
		// The instance pods carry LabelCluster, which logbench's NetworkPolicies select.
		InheritedMetadata: cnpgEmbeddedObjectMetadata{
			Labels: map[string]string{LabelCluster: clusterName(benchmark.Name, dest.Name)},
		},
		Affinity: cnpgAffinityConfiguration{
			NodeSelector: pg.NodeSelector,
			Tolerations:  pg.Tolerations,
		},
	}
	counterConfiguration(&spec.PostgreSQL, pg.Counter)
	for _, secret := range pullSecrets {
		spec.ImagePullSecrets = append(spec.ImagePullSecrets, cnpgLocalObjectReference{Name: secret.Name})
	}
	if !pg.Storage.Size.IsZero() {
		spec.Storage.Size = pg.Storage.Size.String()
	}
	if pg.Affinity != nil {
		spec.Affinity.NodeAffinity = pg.Affinity.NodeAffinity
		spec.Affinity.AdditionalPodAffinity = pg.Affinity.PodAffinity
		spec.Affinity.AdditionalPodAntiAffinity = pg.Affinity.PodAntiAffinity
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&spec)
	if err != nil {
		return nil, err
	}
	cluster := NewClusterObject()
	cluster.SetNamespace(benchmark.Namespace)
	cluster.SetName(clusterName(benchmark.Name, dest.Name))
	cluster.SetLabels(destinationLabels(benchmark.Name, dest.Name))
	cluster.Object["spec"] = content
	patch := shipping.InstancePodPatch()
	if meterImage != "" {
		patch = append(patch, meterPatch(meterImage)...)
	}
	if dest.Ships() {
		// The sidecar comes from the pod patch; its configuration from the ConfigMap that
		// reconcileShipperConfig writes before the Cluster.
		target := shippingTarget(benchmark, dest)
		target.RsyslogImage = rsyslogImage
		patch = append(patch, shipping.PodPatch(target, shipperConfigMapName(cluster.GetName()))...)
	}
	encoded, err := json.Marshal(patch)
	if err != nil {
		return nil, err
	}
	cluster.SetAnnotations(map[string]string{shipping.PodPatchAnnotation: string(encoded)})
	return cluster, nil
}

// meterPatch adds the meter (logbench meter) to an instance pod, and shares the pod's
// process namespace so that the meter sees the processes of the postgres container and
// of the shipper. It runs as a user of its own, which sees of them only what /proc
// shows every user: their CPU time and resident memory, not their environment nor their
// files (shipping.SidecarSecurityContext).
func meterPatch(image string) []shipping.PatchOperation {
	return []shipping.PatchOperation{
		shipping.Add("/spec/shareProcessNamespace", true),
		shipping.Add("/spec/containers/-", corev1.Container{
			Name:  meter.ContainerName,
			Image: image,
			Args:  []string{"meter"},
			Ports: []corev1.ContainerPort{{Name: meter.ContainerName, ContainerPort: meter.Port, Protocol: corev1.ProtocolTCP}},
			// Reading /proc four times a second while a run is measured, idle otherwise.
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("10m"),
					corev1.ResourceMemory: resource.MustParse("16Mi"),
				},
				Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
			},
			VolumeMounts:    []corev1.VolumeMount{shipping.NoAPITokenMount},
			SecurityContext: shipping.SidecarSecurityContext(meter.UID, meter.UID),
		}),
	}
}
