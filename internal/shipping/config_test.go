package shipping

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/golden"
)

// goldenTargets cover every output, both formats and storage types, both shippers and
// every kind of Loki authentication.
func goldenTargets() map[string]Target {
	memBufLimit := resource.MustParse("64Mi")
	loki := func(auth *v1alpha1.LokiAuth) *v1alpha1.LokiSpec {
		return &v1alpha1.LokiSpec{
			URL:      "https://logs.example.com/loki/",
			TenantID: "bench",
			Auth:     auth,
			Labels:   map[string]v1alpha1.LabelValue{"team": "db", "env": "lab"},
		}
	}
	basic := &v1alpha1.LokiAuth{
		Basic: &v1alpha1.BasicAuthSecret{SecretName: "loki-auth", UsernameKey: "username", PasswordKey: "password"},
	}
	bearer := &v1alpha1.LokiAuth{BearerToken: &v1alpha1.SecretKeyRef{SecretName: "loki-token", Key: "token"}}
	target := func(d v1alpha1.Destination) Target {
		return Target{Namespace: "bench-ns", Benchmark: "shipping", Destination: d, Cluster: "shipping-" + d.Name}
	}
	return map[string]Target{
		"fluentbit-null": target(v1alpha1.Destination{Name: "fluent", Type: v1alpha1.DestinationFluentBitSidecar}),
		"fluentbit-stdout-jsonlog-filesystem": target(
			v1alpha1.Destination{Name: "fluent", Type: v1alpha1.DestinationFluentBitSidecar,
				Shipper: &v1alpha1.ShipperSpec{
					Format:      v1alpha1.FormatJSONLog,
					Output:      v1alpha1.OutputStdout,
					StorageType: v1alpha1.StorageFilesystem,
					MemBufLimit: &memBufLimit,
					Image:       "registry.example.com/fluent-bit:custom",
					Resources: corev1.ResourceRequirements{
						Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
					},
				}},
		),
		"fluentbit-loki-basic": target(v1alpha1.Destination{Name: "loki", Type: v1alpha1.DestinationLoki, Loki: loki(basic)}),
		"fluentbit-loki-plain": target(v1alpha1.Destination{Name: "loki", Type: v1alpha1.DestinationFluentBitSidecar,
			Shipper: &v1alpha1.ShipperSpec{
				Output: v1alpha1.OutputLoki,
			}, Loki: &v1alpha1.LokiSpec{URL: "http://loki.monitoring:3100"}}),
		"syslog-local-null": target(v1alpha1.Destination{Name: "sys", Type: v1alpha1.DestinationSyslog}),
		"syslog-unsplit-stdout": target(v1alpha1.Destination{Name: "sys", Type: v1alpha1.DestinationSyslog,
			Syslog:  &v1alpha1.SyslogSpec{SplitMessages: new(false)},
			Shipper: &v1alpha1.ShipperSpec{Output: v1alpha1.OutputStdout}}),
		"syslog-udp-null": target(v1alpha1.Destination{Name: "sys", Type: v1alpha1.DestinationSyslog,
			Syslog: &v1alpha1.SyslogSpec{Transport: v1alpha1.SyslogUDP}}),
		"syslog-tcp-loki-basic": target(v1alpha1.Destination{Name: "sys", Type: v1alpha1.DestinationSyslog,
			Syslog:  &v1alpha1.SyslogSpec{Transport: v1alpha1.SyslogTCP},
			Shipper: &v1alpha1.ShipperSpec{Output: v1alpha1.OutputLoki}, Loki: loki(basic)}),
		"otelcol-loki-bearer": target(v1alpha1.Destination{Name: "otel", Type: v1alpha1.DestinationLoki,
			Shipper: &v1alpha1.ShipperSpec{Kind: v1alpha1.ShipperOpenTelemetryCollector}, Loki: loki(bearer)}),
		"otelcol-loki-basic-jsonlog": target(v1alpha1.Destination{Name: "otel", Type: v1alpha1.DestinationLoki,
			Shipper: &v1alpha1.ShipperSpec{
				Kind:   v1alpha1.ShipperOpenTelemetryCollector,
				Format: v1alpha1.FormatJSONLog,
			}, Loki: loki(basic)}),
	}
}

// TestGolden pins the configuration and the pod patch of every golden target; the
// docs/shipping.md points at these files.
func TestGolden(t *testing.T) {
	for name, target := range goldenTargets() {
		t.Run(name, func(t *testing.T) {
			config, err := Config(target)
			if err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, filepath.Join("testdata", name+".config.golden"), config)
			indented, err := json.MarshalIndent(PodPatch(target, "shipping-"+target.Destination.Name+"-shipper"), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, filepath.Join("testdata", name+".podpatch.golden"), append(indented, '\n'))
			if !ForwardsSyslog(target.Destination) {
				return
			}
			receiver, err := SyslogReceiverConfig(target)
			if err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, filepath.Join("testdata", name+".receiver.config.golden"), receiver)
			pod, err := json.MarshalIndent(SyslogReceiverPodSpec(target, "shipping-sys-syslog"), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, filepath.Join("testdata", name+".receiver.pod.golden"), append(pod, '\n'))
		})
	}
}

// TestCredentialsComeFromSecrets checks that credentials are referenced, never copied:
// every Loki variable of the sidecar comes from a secretKeyRef.
func TestCredentialsComeFromSecrets(t *testing.T) {
	for name, target := range goldenTargets() {
		operations := PodPatch(target, "cm")
		container, ok := operations[len(operations)-1].Value.(corev1.Container)
		if !ok {
			t.Fatalf("%s: the last operation adds %T, not the sidecar", name, operations[len(operations)-1].Value)
		}
		for _, env := range container.Env {
			if env.Value != "" || env.ValueFrom == nil || env.ValueFrom.SecretKeyRef == nil {
				t.Errorf("%s: %s does not come from a Secret: %+v", name, env.Name, env)
			}
		}
		if auth := target.Destination.Loki; auth != nil && auth.Auth != nil && len(container.Env) == 0 {
			t.Errorf("%s: Loki has credentials but the sidecar gets none", name)
		}
	}
}

func TestServerSettingsWriteTheFileTheShipperReads(t *testing.T) {
	for _, format := range []v1alpha1.LogFormat{v1alpha1.FormatCSVLog, v1alpha1.FormatJSONLog} {
		target := Target{Destination: v1alpha1.Destination{Name: "fb", Type: v1alpha1.DestinationFluentBitSidecar,
			Shipper: &v1alpha1.ShipperSpec{Format: format}}}
		settings := ServerSettings(target.Destination)
		written := filepath.Join(settings["log_directory"], strings.TrimSuffix(settings["log_filename"], ".log")) +
			map[string]string{"csvlog": ".csv", "jsonlog": ".json"}[settings["log_destination"]]
		if written != target.logFile() {
			t.Errorf("%s: PostgreSQL writes %s, the shipper reads %s", format, written, target.logFile())
		}
		// The shipper runs as another user, in the postgres group.
		if mode := settings["log_file_mode"]; mode != "0640" {
			t.Errorf("%s: log_file_mode %q, want 0640: the shipper reads the file as the postgres group", format, mode)
		}
	}
}

func TestLokiSelector(t *testing.T) {
	targets := goldenTargets()
	for name, want := range map[string]string{
		"fluentbit-loki-basic": `{job="logbench", namespace="bench-ns", benchmark="shipping", destination="loki"}`,
		"otelcol-loki-bearer":  `{service_namespace="bench-ns", service_name="logbench-shipping-otel"}`,
	} {
		if got := targets[name].LokiSelector(); got != want {
			t.Errorf("%s: selector %s, want %s", name, got, want)
		}
	}
}

// TestCollectorsRecordStartSkipsAQuotedLineThatLooksLikeARecord: the collector's
// line_start_pattern runs on Go's regexp, as here; a line inside a quoted field has its
// quotes doubled by csvlog, so it does not start a record even when it starts with a
// timestamp.
func TestCollectorsRecordStartSkipsAQuotedLineThatLooksLikeARecord(t *testing.T) {
	start := regexp.MustCompile(csvlogRecordLine)
	for line, want := range map[string]bool{
		`2026-01-02 03:04:05.678 UTC,"postgres","bench",4242,"10.244.0.7:41234",6650f1a2.1092,1,"SELECT",`:           true,
		`2026-01-02 03:04:05.678 UTC,,,4242,,6650f1a2.1092,1,,2026-01-02 03:04:00 UTC,,0,LOG,00000,"checkpoint`:      true,
		`2026-01-02 03:04:05.678 +0100,"a ""quoted"" user","bench",7,,`:                                              true,
		`2026-01-02 03:04:05.678 UTC,""postgres"",""postgres"",42,""[local]"",1.2,3,""SELECT"" looks like a record'`: false,
		`  FROM pgbench_accounts WHERE aid = 1; -- lb_x_c1_r1_n"`:                                                    false,
	} {
		if got := start.MatchString(line); got != want {
			t.Errorf("%q starts a record: %v, want %v", line, got, want)
		}
	}
}
