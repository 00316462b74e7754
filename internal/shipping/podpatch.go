package shipping

import (
	corev1 "k8s.io/api/core/v1"

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
		Resources: t.Destination.EffectiveShipper().Resources,
		// The instance pod's securityContext runs every container as the postgres user,
		// whose 0600 log files the shipper must read.
		SecurityContext: SidecarSecurityContext(),
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
		return append(volumes, syslogReceiverPatch(container)...)
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

// SidecarSecurityContext is that of the containers logbench adds to an instance pod: it
// matches CloudNativePG's restricted postgres container.
func SidecarSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: new(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		Privileged:               new(false),
		ReadOnlyRootFilesystem:   new(true),
		RunAsNonRoot:             new(true),
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
