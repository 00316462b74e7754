package shipping

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/workload"
)

// A Syslog destination's receiver is a Fluent Bit sidecar whose syslog input listens on
// a Unix datagram socket in an emptyDir shared with the postgres container, which sees
// the socket as /dev/log: glibc's syslog() sends to _PATH_LOG and PostgreSQL cannot
// choose another path.
const (
	syslogVolume    = "logbench-syslog"
	syslogMountPath = "/logbench-syslog"
	syslogSocket    = "log"
	// devLog is where the postgres container's syslog() sends.
	devLog = "/dev/log"

	// syslogParser reads the messages syslog() sends to /dev/log ("<PRI>Mmm dd
	// hh:mm:ss ident[pid]: text"), the text, newlines included, into message.
	syslogParser = "logbench_syslog"
	syslogRegex  = `^<(?<pri>[0-9]{1,3})>(?<time>[A-Z][a-z]{2} [ 0-9][0-9] [0-9:]{8}) ` +
		`(?<ident>[^ \[:]+)(?:\[(?<pid>[0-9]+)\])?: (?<message>(?m:.*))$`
	// syslogReadSize bounds a message read whole: unsplit, a record is one datagram.
	syslogReadSize = "256K"
)

// syslogInput is the syslog input plugin of the receiver sidecar.
func syslogInput(storage v1alpha1.StorageType) map[string]any {
	return map[string]any{
		"name":              "syslog",
		"alias":             fluentBitInput,
		"tag":               fluentBitInput,
		"mode":              "unix_udp",
		"path":              syslogMountPath + "/" + syslogSocket,
		"unix_perm":         "0660",
		"parser":            syslogParser,
		"buffer_chunk_size": syslogReadSize,
		"buffer_max_size":   syslogReadSize,
		"storage.type":      string(storage),
	}
}

// syslogParsers defines syslogParser.
func syslogParsers() []any {
	return []any{map[string]any{"name": syslogParser, "format": "regex", "regex": syslogRegex}}
}

// syslogFilter keeps the first message of each record of the benchmark's runs, so that
// the counters count records, not the messages PostgreSQL split them into. The tag is in
// the first: log_line_prefix holds %a (the API requires it), and PostgreSQL sends each
// line of a record, prefix first, as messages of its own, the first up to 900 bytes.
func syslogFilter(d v1alpha1.Destination) map[string]any {
	s := d.EffectiveSyslog()
	first := ""
	if *s.SplitMessages {
		// "[seq-1] " with sequence numbers, "[1] " without.
		first = `^\[(?:[0-9]+-)?1\] .*`
	}
	return map[string]any{
		"name":  "grep",
		"match": fluentBitInput,
		"regex": "message " + first + workload.TagPattern(d.Name),
	}
}

// syslogReceiverPatch adds the receiver sidecar, container, to the instance pod and its
// socket as the postgres container's /dev/log. The socket must exist before the postgres
// container starts: the kubelet bind-mounts a subPath that exists and creates a
// directory for one that does not. So the receiver is a native sidecar (an init
// container that keeps running), which the kubelet starts, and waits for its startup
// probe, before the postgres container: Fluent Bit answers on its HTTP port only after
// its inputs, the socket among them, are set up. A sidecar that restarts makes a new
// socket that the postgres container's /dev/log, bound to the old one, does not reach:
// the records sent after that are lost, and counted lost.
func syslogReceiverPatch(container corev1.Container) []PatchOperation {
	container.VolumeMounts = append(
		slices.DeleteFunc(container.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == scratchVolume }),
		corev1.VolumeMount{Name: syslogVolume, MountPath: syslogMountPath},
	)
	container.RestartPolicy = new(corev1.ContainerRestartPolicyAlways)
	container.StartupProbe = &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "/", Port: intstr.FromInt32(fluentBitMetricsPort),
		}},
		PeriodSeconds:    1,
		FailureThreshold: 60,
	}
	return []PatchOperation{
		Add("/spec/volumes/-", corev1.Volume{Name: syslogVolume, VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{},
		}}),
		// CloudNativePG's instance pods have the postgres container first
		// (pkg/specs/pods.go, v1.30.0).
		Add("/spec/containers/0/volumeMounts/-", corev1.VolumeMount{
			Name: syslogVolume, MountPath: devLog, SubPath: syslogSocket,
		}),
		Add("/spec/initContainers/-", container),
	}
}
