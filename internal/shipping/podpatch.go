package shipping

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/logbench/logbench/api/v1alpha1"
)

// PodPatchAnnotation holds, on a CloudNativePG Cluster, an RFC 6902 JSON patch that
// CloudNativePG applies to every instance pod it creates (and its webhook checks against
// a generated pod); CloudNativePG has no sidecar field.
const PodPatchAnnotation = "cnpg.io/podPatch"

const (
	// ContainerName is the shipper sidecar of an instance pod.
	ContainerName = "logbench-shipper"
	// ConfigKey is the key of the shipper's configuration in its ConfigMap.
	ConfigKey = "config.yaml"

	logVolume        = "logbench-log"
	noAPITokenVolume = "logbench-no-api-token"
	configVolume     = "logbench-shipper-config"
	configMountPath  = "/etc/logbench-shipper"
	bufferVolume     = "logbench-shipper-buffer"
	metricsPortName  = "shipper-metrics"

	// bufferMountPath holds the sidecar's own state (Fluent Bit's tail offsets and
	// filesystem buffer) on an emptyDir that outlives restarts of the container, not of
	// the pod.
	bufferMountPath = "/logbench-shipper"
)

// jsonPatchAdd is RFC 6902's add operation.
const jsonPatchAdd = "add"

// PatchOperation is one operation of an RFC 6902 JSON patch.
type PatchOperation struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// Add is an RFC 6902 add operation.
func Add(path string, value any) PatchOperation {
	return PatchOperation{Op: jsonPatchAdd, Path: path, Value: value}
}

// PodPatch returns the operations of PodPatchAnnotation adding the destination's
// shipper to the instance pods, with its configuration from the ConfigMap configMap
// (ConfigKey).
func PodPatch(t Target, configMap string) []PatchOperation {
	if UsesRsyslog(t.Destination) {
		return rsyslogPodPatch(t, configMap)
	}
	shipper := t.shipper()
	container := corev1.Container{
		Name:  ContainerName,
		Image: t.Image(),
		Args:  shipper.Args(configMountPath + "/" + ConfigKey),
		Env:   CredentialsEnv(t.Destination.Loki),
		Ports: []corev1.ContainerPort{{
			Name: metricsPortName, ContainerPort: t.MetricsPort(), Protocol: corev1.ProtocolTCP,
		}},
		VolumeMounts: []corev1.VolumeMount{
			// The log volume, read-only, at the path PostgreSQL writes to, so that the
			// configuration names the file as PostgreSQL does.
			{Name: logVolume, MountPath: LogDirectory, ReadOnly: true},
			NoAPITokenMount,
			{Name: configVolume, MountPath: configMountPath, ReadOnly: true},
			{Name: bufferVolume, MountPath: bufferMountPath},
		},
		Resources:       t.Destination.EffectiveShipper().Resources,
		SecurityContext: SidecarSecurityContext(ShipperUID, PostgresGID),
	}
	volumes := []PatchOperation{
		Add("/spec/volumes/-", corev1.Volume{Name: configVolume, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}},
		}}),
		Add("/spec/volumes/-", corev1.Volume{Name: bufferVolume, VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{},
		}}),
	}
	if t.Destination.Type == v1alpha1.DestinationSyslog {
		// Fluent Bit answers on its HTTP port once its inputs are set up.
		started := corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "/", Port: intstr.FromInt32(fluentBitMetricsPort),
		}}
		return append(volumes, syslogReceiverPatch(container, started)...)
	}
	return append(volumes, Add("/spec/containers/-", container))
}

// postgresContainerPath is the postgres container of CloudNativePG's instance pods, the
// first (pkg/specs/pods.go, v1.30.0).
const postgresContainerPath = "/spec/containers/0"

// NoAPITokenMount hides the ServiceAccount token from a container logbench adds to an
// instance pod: CloudNativePG's instance manager needs the pod's token, so the pod
// mounts it, but the ServiceAccount admission adds no token to a container that already
// mounts something at its path, here an empty read-only volume (InstancePodPatch).
var NoAPITokenMount = corev1.VolumeMount{
	Name: noAPITokenVolume, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true,
}

// InstancePodPatch returns the operations every instance pod gets before logbench's
// containers: the log volume at LogDirectory in the postgres container, and the empty
// volume of NoAPITokenMount.
func InstancePodPatch() []PatchOperation {
	emptyDir := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	return []PatchOperation{
		Add("/spec/volumes/-", corev1.Volume{Name: logVolume, VolumeSource: emptyDir}),
		Add(postgresContainerPath+"/volumeMounts/-", corev1.VolumeMount{Name: logVolume, MountPath: LogDirectory}),
		Add("/spec/volumes/-", corev1.Volume{Name: noAPITokenVolume, VolumeSource: emptyDir}),
	}
}

// The users of the containers logbench adds to an instance pod, which shares its process
// namespace (for the meter). The kernel lets a process read another's environment,
// memory and root folder through /proc only when both run as one user (or with
// CAP_SYS_PTRACE, which every container drops): PostgreSQL's processes run as the
// postgres user (PostgresUID), whose root holds the pod's ServiceAccount token and
// CloudNativePG's /controller, so no added container runs as it, nor as another added
// container's user: the shipper's environment holds Loki's credentials.
const (
	// PostgresUID and PostgresGID are the postgres user and group of CloudNativePG's
	// images, which run the instance pods (its postgresUID and postgresGID, also the
	// pod's fsGroup).
	PostgresUID = 26
	PostgresGID = 26
	// ShipperUID is the shipper's user in the instance pods, the nobody user of most
	// images; its group is the postgres group, which may read PostgreSQL's log files
	// (log_file_mode, ServerSettings) and write to the syslog receiver's socket.
	ShipperUID = 65534
)

// SidecarSecurityContext is that of the containers logbench adds to an instance pod and
// of the syslog receiver's, running as user and group: otherwise CloudNativePG's
// restricted postgres container's.
func SidecarSecurityContext(user, group int64) *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: new(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		Privileged:               new(false),
		ReadOnlyRootFilesystem:   new(true),
		RunAsNonRoot:             new(true),
		RunAsUser:                new(user),
		RunAsGroup:               new(group),
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// CredentialsEnv passes Loki's credentials from their Secret to the environment
// variables the shipper configurations name and the agent's Loki client reads
// (LokiClientFromEnv); the operator never reads them.
func CredentialsEnv(loki *v1alpha1.LokiSpec) []corev1.EnvVar {
	if loki == nil || loki.Auth == nil {
		return nil
	}
	fromSecret := func(name string, secret v1alpha1.SecretName, key v1alpha1.SecretKey) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: string(secret)},
			Key:                  string(key),
		}}}
	}
	if basic := loki.Auth.Basic; basic != nil {
		return []corev1.EnvVar{
			fromSecret(envLokiUsername, basic.SecretName, basic.UsernameKey),
			fromSecret(envLokiPassword, basic.SecretName, basic.PasswordKey),
		}
	}
	if token := loki.Auth.BearerToken; token != nil {
		return []corev1.EnvVar{fromSecret(envLokiBearerToken, token.SecretName, token.Key)}
	}
	return nil
}
