package shipping

import (
	"fmt"
	"net/http"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

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

// syslogInput is the syslog input plugin of the receiver sidecar. Its socket's group is
// the sidecar's, the postgres group (SidecarSecurityContext), which unix_perm lets write.
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
// its inputs, the socket among them, are set up (started, the receiver's startup probe,
// says so). A sidecar that restarts makes a new socket that the postgres container's
// /dev/log, bound to the old one, does not reach: the records sent after that are lost,
// and counted lost.
func syslogReceiverPatch(container corev1.Container, started corev1.ProbeHandler) []PatchOperation {
	container.VolumeMounts = append(
		slices.DeleteFunc(container.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == logVolume }),
		corev1.VolumeMount{Name: syslogVolume, MountPath: syslogMountPath},
	)
	container.RestartPolicy = new(corev1.ContainerRestartPolicyAlways)
	container.StartupProbe = &corev1.Probe{ProbeHandler: started, PeriodSeconds: 1, FailureThreshold: 60}
	return []PatchOperation{
		Add("/spec/volumes/-", corev1.Volume{Name: syslogVolume, VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{},
		}}),
		Add(postgresContainerPath+"/volumeMounts/-", corev1.VolumeMount{
			Name: syslogVolume, MountPath: devLog, SubPath: syslogSocket,
		}),
		Add("/spec/initContainers/-", container),
	}
}

// syslogReceiverPort is where a Syslog destination's receiver Service listens, over UDP
// or TCP as the destination's transport says.
const syslogReceiverPort = 5140

// syslogForwardParser reads what the sidecar forwards: RFC 5424 messages whose MSG is
// the text PostgreSQL sent, its header included, after the byte order mark Fluent Bit's
// syslog output puts before it.
const (
	syslogForwardParser = "logbench_syslog_rfc5424"
	syslogForwardRegex  = `^<(?<pri>[0-9]{1,3})>1 (?<time>[^ ]+) (?<host>[^ ]+) (?<ident>[^ ]+) (?<pid>[-0-9]+) ` +
		`(?<msgid>[^ ]+) (?<extradata>-|\[.*?\]) (?:\uFEFF)?(?<message>(?m:.*))$`
	// syslogMaxForwarded keeps an unsplit record whole in one UDP datagram where it fits:
	// Fluent Bit cuts RFC 5424 messages at 2048 bytes by default.
	syslogMaxForwarded = 65000
)

// syslogForwardOutput is the sidecar's output of a forwarding transport: the syslog
// output plugin sending each kept record to the receiver Service at host.
func syslogForwardOutput(transport v1alpha1.SyslogTransport, host string) map[string]any {
	return map[string]any{
		"name":                string(fluentBitSyslogOutput),
		"alias":               fluentBitOutput,
		"match":               fluentBitInput,
		"host":                host,
		"port":                syslogReceiverPort,
		"mode":                string(transport),
		"syslog_format":       "rfc5424",
		"syslog_maxsize":      syslogMaxForwarded,
		"syslog_message_key":  "message",
		"syslog_appname_key":  "ident",
		"syslog_procid_key":   "pid",
		"syslog_hostname_key": "host",
	}
}

// fluentBitSyslogOutput is the name of Fluent Bit's syslog output plugin.
const fluentBitSyslogOutput = "syslog"

// syslogReceiverConfig is the configuration of the receiver Service's Fluent Bit: the
// forwarded records in over the transport, the same filter as the sidecar's, and the
// destination's output, whose counters say what arrived.
func syslogReceiverConfig(t Target, transport v1alpha1.SyslogTransport) (map[string]any, error) {
	output, err := fluentBitOutputConfig(t, t.Destination.EffectiveShipper().Output)
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"service": fluentBitService(),
		"parsers": []any{map[string]any{"name": syslogForwardParser, "format": "regex", "regex": syslogForwardRegex}},
		"pipeline": map[string]any{
			"inputs": []any{map[string]any{
				"name": "syslog", "alias": fluentBitInput, "tag": fluentBitInput,
				"mode": string(transport), "listen": "0.0.0.0", "port": syslogReceiverPort,
				"parser": syslogForwardParser, "buffer_chunk_size": syslogReadSize, "buffer_max_size": syslogReadSize,
			}},
			"filters": []any{syslogFilter(t.Destination)},
			"outputs": []any{output},
		},
	}, nil
}

// syslogForwardingConfigs are the configurations of a forwarding Syslog destination's
// sidecar, sending to the receiver Service at host, and of that receiver.
func syslogForwardingConfigs(t Target, host string) (sidecar, receiver []byte, err error) {
	transport := t.Destination.EffectiveSyslog().Transport
	receiverConfig, err := syslogReceiverConfig(t, transport)
	if err != nil {
		return nil, nil, err
	}
	if sidecar, err = yaml.Marshal(fluentBitConfig(t, syslogForwardOutput(transport, host))); err != nil {
		return nil, nil, err
	}
	receiver, err = yaml.Marshal(receiverConfig)
	return sidecar, receiver, err
}

// ForwardsSyslog tells whether d is a Syslog destination whose sidecar forwards the
// records to a receiver Service (transport udp or tcp) rather than counting them itself.
func ForwardsSyslog(d v1alpha1.Destination) bool {
	return d.Type == v1alpha1.DestinationSyslog && d.EffectiveSyslog().Transport != v1alpha1.SyslogLocal
}

// SyslogReceiverName names the receiver of a forwarding Syslog destination of cluster:
// its Deployment, Service and ConfigMap. CloudNativePG's 50-character limit on cluster
// names keeps it within the 63 of a Service.
func SyslogReceiverName(cluster string) string {
	return cluster + "-syslog"
}

// SyslogReceiverHost is the DNS name of the target's receiver Service.
func (t Target) SyslogReceiverHost() string {
	return SyslogReceiverName(t.Cluster) + "." + t.Namespace + ".svc"
}

// SyslogReceiverConfig is the configuration of a forwarding Syslog destination's
// receiver, the content of its ConfigMap under ConfigKey.
func SyslogReceiverConfig(t Target) ([]byte, error) {
	_, receiver, err := syslogForwardingConfigs(t, t.SyslogReceiverHost())
	return receiver, err
}

// SyslogPortName names the receiver's syslog port.
const SyslogPortName = "syslog"

// SyslogReceiverPorts are the ports of the receiver's pod and Service: the syslog input,
// over the destination's transport, and Fluent Bit's metrics.
func SyslogReceiverPorts(d v1alpha1.Destination) []corev1.ContainerPort {
	protocol := corev1.ProtocolUDP
	if d.EffectiveSyslog().Transport == v1alpha1.SyslogTCP {
		protocol = corev1.ProtocolTCP
	}
	return []corev1.ContainerPort{
		{Name: SyslogPortName, ContainerPort: syslogReceiverPort, Protocol: protocol},
		{Name: metricsPortName, ContainerPort: fluentBitMetricsPort, Protocol: corev1.ProtocolTCP},
	}
}

// SyslogReceiverPodSpec is the pod of a forwarding Syslog destination's receiver, its
// configuration from the ConfigMap configMap (ConfigKey): hardened as the sidecars are,
// without a ServiceAccount token, ready once Fluent Bit serves its HTTP port, which it
// does after its inputs listen.
func SyslogReceiverPodSpec(t Target, configMap string) corev1.PodSpec {
	return corev1.PodSpec{
		AutomountServiceAccountToken: new(false),
		EnableServiceLinks:           new(false),
		SecurityContext: &corev1.PodSecurityContext{
			// The Fluent Bit image names no user: run as an unprivileged one.
			RunAsNonRoot: new(true),
			RunAsUser:    new(int64(ShipperUID)),
			RunAsGroup:   new(int64(ShipperUID)),
		},
		Containers: []corev1.Container{{
			Name:      ContainerName,
			Image:     t.Image(),
			Args:      t.shipper().Args(configMountPath + "/" + ConfigKey),
			Env:       CredentialsEnv(t.Destination.Loki),
			Ports:     SyslogReceiverPorts(t.Destination),
			Resources: t.Destination.EffectiveShipper().Resources,
			ReadinessProbe: &corev1.Probe{
				ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
					Path: "/", Port: intstr.FromInt32(fluentBitMetricsPort),
				}},
				PeriodSeconds: 1,
			},
			VolumeMounts:    []corev1.VolumeMount{{Name: configVolume, MountPath: configMountPath, ReadOnly: true}},
			SecurityContext: SidecarSecurityContext(ShipperUID, ShipperUID),
		}},
		Volumes: []corev1.Volume{{Name: configVolume, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}},
		}}},
	}
}

// SyslogReceiverScraper returns the scraper of the target's receiver, through its
// Service.
func (t Target) SyslogReceiverScraper(httpClient *http.Client) ShipperScraper {
	return t.Scraper(t.SyslogReceiverHost(), httpClient)
}

// ForwardedStages counts a run's records at each stage of a forwarding Syslog
// destination: kept by the sidecar's input, forwarded by its output, kept by the
// receiver's input, sent by the receiver's output and, when that output is Loki, stored
// there. Each end counts its own: a datagram lost between them is counted as the
// difference of forwarded and received, never assumed.
func ForwardedStages(sidecar, receiver ShipperMetrics, stored *int64) v1alpha1.RecordStages {
	return v1alpha1.RecordStages{
		Read: new(sidecar.Kept()), Forwarded: new(sidecar.Total().Sent),
		Received: new(receiver.Kept()), Sent: new(receiver.Total().Sent), Stored: stored,
	}
}

// ForwardedReasons explain what a forwarding Syslog destination lost before the
// receiver's output: records the sidecar's output dropped, and records it forwarded that
// the receiver did not read.
func ForwardedReasons(transport v1alpha1.SyslogTransport, stages v1alpha1.RecordStages, sidecar OutputCounters,
) []string {
	var reasons []string
	if sidecar.Dropped > 0 {
		reasons = append(reasons, fmt.Sprintf("the sidecar dropped %d records it could not forward over %s "+
			"(errors or retries exhausted)", sidecar.Dropped, transport))
	}
	if stages.LostAt == "received" {
		reasons = append(reasons, fmt.Sprintf("%d of the %d records the sidecar forwarded over %s never reached "+
			"the receiver's input", *stages.Forwarded-*stages.Received, *stages.Forwarded, transport))
	}
	return reasons
}
