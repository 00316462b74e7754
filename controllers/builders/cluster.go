package builders

import (
	"encoding/json"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers/cloudnativepg"
	"github.com/logbench/logbench/internal/meter"
	"github.com/logbench/logbench/internal/shipping"
)

// counterExtensionVolume names the counter's image volume; CloudNativePG's extension
// names are DNS labels, without the underscore of the library's name.
const counterExtensionVolume = "logbench-counter"

// counterConfiguration adds the logbench_counter extension to a cluster's PostgreSQL
// configuration. The counter must be the last library to install its log hook, to count
// only what the others let through (logbench_counter/README.md): CloudNativePG puts
// the libraries of a Cluster's list first and its managed ones after, so the list
// names the managed ones the parameters load, in CloudNativePG's order, then the counter.
func counterConfiguration(config *cloudnativepg.PostgresConfiguration, counter *v1alpha1.CounterSpec) {
	if counter == nil {
		return
	}
	for _, library := range cloudnativepg.ManagedLibraries {
		for name := range config.Parameters {
			if strings.HasPrefix(name, library+".") {
				config.SharedPreloadLibraries = append(config.SharedPreloadLibraries, library)
				break
			}
		}
	}
	config.SharedPreloadLibraries = append(config.SharedPreloadLibraries, v1alpha1.CounterExtension)
	if counter.Source == v1alpha1.CounterInExtensionImage {
		config.Extensions = []cloudnativepg.ExtensionConfiguration{{
			Name:  counterExtensionVolume,
			Image: corev1.ImageVolumeSource{Reference: counter.ExtensionImage},
		}}
	}
}

// Cluster returns the CloudNativePG Cluster serving one destination, without owner
// reference; its instance pods get the meter from meterImage, none when it is empty, an
// Rsyslog receiver that names no image rsyslogImage (empty: shipping.RsyslogImage), and
// pull their images, the sidecars' included, with pullSecrets.
func Cluster(
	benchmark *v1alpha1.LoggingBenchmark, dest v1alpha1.Destination, meterImage string,
	pullSecrets []corev1.LocalObjectReference, rsyslogImage string,
) (*unstructured.Unstructured, error) {
	pg := benchmark.Spec.Postgres
	spec := cloudnativepg.ClusterSpec{
		Instances: pg.Instances,
		ImageName: pg.ImageName,
		// The agent connects as the superuser: it changes the logging settings and reads
		// the server's counters.
		EnableSuperuserAccess: true,
		PostgreSQL: cloudnativepg.PostgresConfiguration{
			Parameters: benchmark.Spec.ServerParameters(dest),
			// CloudNativePG rejects log_destination and the other destination settings as
			// parameters, so the agent applies them with ALTER SYSTEM; shipping
			// destinations too, to write the file their sidecar reads.
			EnableAlterSystem: dest.Type != v1alpha1.DestinationNone,
		},
		Storage:   cloudnativepg.StorageConfiguration{StorageClass: pg.Storage.StorageClass},
		Resources: pg.Resources,
		LogLevel:  string(pg.InstanceManagerLogLevel),
		// The instance pods carry LabelCluster, which logbench's NetworkPolicies select.
		InheritedMetadata: cloudnativepg.EmbeddedObjectMetadata{
			Labels: map[string]string{LabelCluster: ClusterName(benchmark.Name, dest.Name)},
		},
		Affinity: cloudnativepg.AffinityConfiguration{
			NodeSelector: pg.NodeSelector,
			Tolerations:  pg.Tolerations,
		},
		// CloudNativePG probes a starting instance every 10 s, so the runs could wait up
		// to 10 s after PostgreSQL accepts connections. The startup probe ends at its first
		// success: probing every second costs the runs nothing.
		Probes: &cloudnativepg.ProbesConfiguration{Startup: &cloudnativepg.Probe{PeriodSeconds: 1}},
	}
	counterConfiguration(&spec.PostgreSQL, pg.Counter)
	for _, secret := range pullSecrets {
		spec.ImagePullSecrets = append(spec.ImagePullSecrets, cloudnativepg.LocalObjectReference{Name: secret.Name})
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
	cluster := cloudnativepg.NewCluster()
	cluster.SetNamespace(benchmark.Namespace)
	cluster.SetName(ClusterName(benchmark.Name, dest.Name))
	cluster.SetLabels(DestinationLabels(benchmark.Name, dest.Name))
	cluster.Object["spec"] = content
	patch := shipping.InstancePodPatch()
	if meterImage != "" {
		patch = append(patch, MeterPatch(meterImage)...)
	}
	if dest.Ships() {
		// The sidecar comes from the pod patch; its configuration from the ConfigMap
		// ShipperConfigMap, which the reconciler writes before the Cluster.
		target := ShippingTarget(benchmark, dest)
		target.RsyslogImage = rsyslogImage
		patch = append(patch, shipping.PodPatch(target, ShipperConfigMapName(cluster.GetName()))...)
	}
	encoded, err := json.Marshal(patch)
	if err != nil {
		return nil, err
	}
	cluster.SetAnnotations(map[string]string{shipping.PodPatchAnnotation: string(encoded)})
	return cluster, nil
}

// MeterPatch adds the meter (logbench meter) to an instance pod, and shares the pod's
// process namespace so that the meter sees the processes of the postgres container and
// of the shipper. It runs as a user of its own, which sees of them only what /proc
// shows every user: their CPU time and resident memory, not their environment nor their
// files (shipping.SidecarSecurityContext).
func MeterPatch(image string) []shipping.PatchOperation {
	return []shipping.PatchOperation{
		shipping.Add("/spec/shareProcessNamespace", true),
		shipping.Add("/spec/containers/-", instanceMeter(image)),
	}
}

// instanceMeter is the meter of an instance pod, whose ServiceAccount token it does not
// mount: the pod mounts one for CloudNativePG's instance manager.
func instanceMeter(image string) corev1.Container {
	container := meterContainer(image, "meter")
	container.VolumeMounts = []corev1.VolumeMount{shipping.NoAPITokenMount}
	return container
}

// meterContainer runs logbench meter with args in a pod that shares its process
// namespace.
func meterContainer(image string, args ...string) corev1.Container {
	return corev1.Container{
		Name:  meter.ContainerName,
		Image: image,
		Args:  args,
		Ports: []corev1.ContainerPort{meterPort},
		// Reading /proc four times a second while a run is measured, idle otherwise.
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("10m"),
				corev1.ResourceMemory: resource.MustParse("16Mi"),
			},
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
		},
		SecurityContext: shipping.SidecarSecurityContext(meter.UID, meter.UID),
	}
}

var meterPort = corev1.ContainerPort{Name: meter.ContainerName, ContainerPort: meter.Port, Protocol: corev1.ProtocolTCP}
