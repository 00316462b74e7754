package v1alpha1_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/testenv"
)

const testNamespace = "default"

// minimalSpec is the smallest spec admission accepts; the specs of the tables replace its
// top-level fields.
const minimalSpec = `destinations: [{name: csvlog, type: CSVLog}]`

// newBenchmark returns a LoggingBenchmark whose spec is minimalSpec with the top-level
// fields of specYAML in place of its own. It is unstructured so that the fields a spec
// leaves out stay absent and get the API server's defaults, as with kubectl apply; a typed
// object would send the zero values of the fields it has not set.
func newBenchmark(specYAML string) *unstructured.Unstructured {
	spec := map[string]any{}
	for _, document := range []string{minimalSpec, specYAML} {
		var fields map[string]any
		Expect(yaml.Unmarshal([]byte(document), &fields)).To(Succeed(), document)
		maps.Copy(spec, fields)
	}
	return unstructuredBenchmark(map[string]any{
		"metadata": map[string]any{"generateName": "admission-", "namespace": testNamespace},
		"spec":     spec,
	})
}

// unstructuredBenchmark turns the fields of a LoggingBenchmark document into an
// Unstructured object of the right kind, with JSON numbers decoded as the API machinery
// expects them (int64 or float64).
func unstructuredBenchmark(fields map[string]any) *unstructured.Unstructured {
	fields["apiVersion"] = v1alpha1.GroupVersion.String()
	fields["kind"] = "LoggingBenchmark"
	document, err := json.Marshal(fields)
	Expect(err).NotTo(HaveOccurred())
	benchmark := &unstructured.Unstructured{}
	Expect(benchmark.UnmarshalJSON(document)).To(Succeed())
	return benchmark
}

// flowItems returns n comma-separated YAML flow items, the i-th formatted from format
// and i, for a sequence ([...]) or a mapping ({...}).
func flowItems(n int, format string) string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprintf(format, i+1)
	}
	return strings.Join(items, ", ")
}

// sampleObjects returns the objects of a sample file, one per YAML document, numbers
// decoded as the API machinery expects them.
func sampleObjects(path string) []*unstructured.Unstructured {
	content, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(content)))
	var objects []*unstructured.Unstructured
	for {
		document, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objects
		}
		Expect(err).NotTo(HaveOccurred(), path)
		document, err = yaml.YAMLToJSON(document)
		Expect(err).NotTo(HaveOccurred(), path)
		if string(document) == "null" {
			continue
		}
		object := &unstructured.Unstructured{}
		Expect(object.UnmarshalJSON(document)).To(Succeed(), path)
		objects = append(objects, object)
	}
}

var _ = Describe("LoggingBenchmark admission", func() {
	DescribeTable(
		"rejects an invalid spec with a message saying what to change",
		func(specYAML, field, message string) {
			err := k8sClient.Create(ctx, newBenchmark(specYAML))
			Expect(err).To(HaveOccurred(), "the API server accepted the spec %s", specYAML)
			Expect(err.Error()).To(And(ContainSubstring(field), ContainSubstring(message)))
		},
		// Destinations.
		Entry("no destinations", `destinations: []`,
			"spec.destinations", "should have at least 1 items"),
		Entry("destinations left out", `destinations: null`,
			"spec.destinations", "Required value"),
		Entry("more than 12 destinations", "destinations: ["+flowItems(13, "{name: d%d, type: CSVLog}")+"]",
			"spec.destinations", "must have at most 12 items"),
		Entry("duplicate destination names", `destinations: [{name: a, type: CSVLog}, {name: a, type: JSONLog}]`,
			"spec.destinations[1]", "Duplicate value"),
		Entry("upper-case destination name", `destinations: [{name: CSV, type: CSVLog}]`,
			"spec.destinations[0].name", "should match"),
		Entry("destination name ending with a dash", `destinations: [{name: csv-, type: CSVLog}]`,
			"spec.destinations[0].name", "should match"),
		Entry("empty destination name", `destinations: [{name: "", type: CSVLog}]`,
			"spec.destinations[0].name", "should be at least 1 chars long"),
		Entry("destination name over 20 characters", `destinations: [{name: abcdefghijklmnopqrstu, type: CSVLog}]`,
			"spec.destinations[0].name", "may not be more than 20"),
		Entry("unknown destination type", `destinations: [{name: kafka, type: Kafka}]`,
			"spec.destinations[0].type", "Unsupported value"),
		Entry("destination type left out", `destinations: [{name: csvlog}]`,
			"spec.destinations[0].type", "Required value"),
		Entry("an instance manager log level CloudNativePG does not know", `postgres: {instanceManagerLogLevel: verbose}`,
			"spec.postgres.instanceManagerLogLevel", "Unsupported value"),

		// Shipping destinations.
		Entry("Loki destination without loki", `destinations: [{name: loki, type: Loki}]`,
			"spec.destinations[0]", "loki is required by Loki destinations"),
		Entry(
			"FluentBitSidecar with output Loki without loki",
			`destinations: [{name: fb, type: FluentBitSidecar, shipper: {output: Loki}}]`,
			"spec.destinations[0]",
			"loki is required by Loki destinations and by FluentBitSidecar and Syslog destinations with shipper.output Loki",
		),
		Entry("loki on a FluentBitSidecar with output Null",
			`destinations: [{name: fb, type: FluentBitSidecar, loki: {url: "http://loki:3100"}}]`,
			"spec.destinations[0]", "applies to no other destination"),
		Entry("loki on a CSVLog destination", `destinations: [{name: csv, type: CSVLog, loki: {url: "http://loki:3100"}}]`,
			"spec.destinations[0]", "applies to no other destination"),
		// Stdout destinations counted in their node agent's Loki.
		Entry("a selector on a Loki destination",
			`destinations: [{name: loki, type: Loki, loki: {url: "http://loki:3100", selector: '{job="x"}'}}]`,
			"spec.destinations[0]", "loki.selector applies only to Stdout destinations"),
		Entry("labels on a Stdout destination's loki",
			`destinations: [{name: out, type: Stdout, loki: {url: "http://loki:3100", labels: {team: a}}}]`,
			"spec.destinations[0]", "select them with loki.selector"),
		Entry("containerLog without loki", `destinations: [{name: out, type: Stdout, containerLog: Skip}]`,
			"spec.destinations[0]", "containerLog applies only to Stdout destinations counted in Loki"),
		Entry("containerLog on a Loki destination",
			`destinations: [{name: loki, type: Loki, containerLog: Count, loki: {url: "http://loki:3100"}}]`,
			"spec.destinations[0]", "containerLog applies only to Stdout destinations counted in Loki"),
		Entry("a selector that is not a stream selector",
			`destinations: [{name: out, type: Stdout, loki: {url: "http://loki:3100", selector: 'namespace="a"'}}]`,
			"spec.destinations[0].loki.selector", "selector must be a LogQL stream selector"),
		Entry("a selector with an unknown placeholder",
			`destinations: [{name: out, type: Stdout, loki: {url: "http://loki:3100", selector: '{app="${app}"}'}}]`,
			"spec.destinations[0].loki.selector", "selector may use only ${namespace}, ${pod}, ${container} and ${cluster}"),
		Entry("shipper on a CSVLog destination", `destinations: [{name: csv, type: CSVLog, shipper: {}}]`,
			"spec.destinations[0]", "shipper applies only to destinations of type FluentBitSidecar, Loki and Syslog"),
		Entry("OpenTelemetry Collector on a FluentBitSidecar",
			`destinations: [{name: fb, type: FluentBitSidecar, shipper: {kind: OpenTelemetryCollector}}]`,
			"spec.destinations[0]", "FluentBitSidecar and Syslog destinations ship with Fluent Bit"),
		Entry("OpenTelemetry Collector receiving syslog",
			`destinations: [{name: sys, type: Syslog, shipper: {kind: OpenTelemetryCollector}}]`,
			"spec.destinations[0]", "FluentBitSidecar and Syslog destinations ship with Fluent Bit"),
		Entry("syslog on a CSVLog destination", `destinations: [{name: csv, type: CSVLog, syslog: {}}]`,
			"spec.destinations[0]", "syslog applies only to destinations of type Syslog"),
		Entry("a facility other than LOCAL0-7", `destinations: [{name: sys, type: Syslog, syslog: {facility: DAEMON}}]`,
			"spec.destinations[0].syslog.facility", "Unsupported value"),
		Entry("an unknown transport", `destinations: [{name: sys, type: Syslog, syslog: {transport: relp}}]`,
			"spec.destinations[0].syslog.transport", "Unsupported value"),
		Entry("an ident with a space", `destinations: [{name: sys, type: Syslog, syslog: {ident: "pg 15"}}]`,
			"spec.destinations[0].syslog.ident", "should match"),
		Entry("rsyslog forwarding over udp",
			`destinations: [{name: sys, type: Syslog, syslog: {receiver: Rsyslog, transport: udp}}]`,
			"spec.destinations[0].syslog", "the Rsyslog receiver counts the records in the instance pod"),
		Entry("a rate limit for Fluent Bit", `destinations: [{name: sys, type: Syslog, syslog: {rateLimit: {intervalSeconds: 5, burst: 200}}}]`,
			"spec.destinations[0].syslog", "rateLimit is rsyslog's"),
		Entry("a rate limit of no interval",
			`destinations: [{name: sys, type: Syslog, syslog: {receiver: Rsyslog, rateLimit: {intervalSeconds: 0, burst: 200}}}]`,
			"spec.destinations[0].syslog.rateLimit.intervalSeconds", "should be greater than or equal to 1"),
		Entry("a rate limit that would drop the agent's marker",
			`destinations: [{name: sys, type: Syslog, syslog: {receiver: Rsyslog, rateLimit: {intervalSeconds: 5, burst: 9}}}]`,
			"spec.destinations[0].syslog.rateLimit.burst", "should be greater than or equal to 10"),
		Entry("an output for rsyslog",
			`destinations: [{name: sys, type: Syslog, syslog: {receiver: Rsyslog}, shipper: {output: Stdout}}]`,
			"spec.destinations[0]", "the Rsyslog receiver writes a file"),
		Entry("a Syslog destination sending to Loki without loki",
			`destinations: [{name: sys, type: Syslog, shipper: {output: Loki}}]`,
			"spec.destinations[0]", "loki is required by Loki destinations"),
		Entry("output Null on a Loki destination",
			`destinations: [{name: loki, type: Loki, shipper: {output: "Null"}, loki: {url: "http://loki:3100"}}]`,
			"spec.destinations[0]", "a Loki destination always ships to Loki"),
		Entry("unknown shipper kind", `destinations: [{name: fb, type: FluentBitSidecar, shipper: {kind: Vector}}]`,
			"spec.destinations[0].shipper.kind", "Unsupported value"),
		Entry("unknown shipper output", `destinations: [{name: fb, type: FluentBitSidecar, shipper: {output: Kafka}}]`,
			"spec.destinations[0].shipper.output", "Unsupported value"),
		Entry("Stderr shipper format", `destinations: [{name: fb, type: FluentBitSidecar, shipper: {format: Stderr}}]`,
			"spec.destinations[0].shipper.format", "the shipper reads CSVLog or JSONLog files"),
		Entry("unknown storage type", `destinations: [{name: fb, type: FluentBitSidecar, shipper: {storageType: disk}}]`,
			"spec.destinations[0].shipper.storageType", "Unsupported value"),
		Entry("memBufLimit 0", `destinations: [{name: fb, type: FluentBitSidecar, shipper: {memBufLimit: "0"}}]`,
			"spec.destinations[0].shipper.memBufLimit", "memBufLimit must be greater than 0 and at most 4Gi"),
		Entry("memBufLimit over 4Gi", `destinations: [{name: fb, type: FluentBitSidecar, shipper: {memBufLimit: 5Gi}}]`,
			"spec.destinations[0].shipper.memBufLimit", "memBufLimit must be greater than 0 and at most 4Gi"),
		Entry(
			"Fluent Bit buffer settings on the OpenTelemetry Collector",
			`destinations: [{name: loki, type: Loki, shipper: {kind: OpenTelemetryCollector, storageType: filesystem}, loki: {url: "http://loki:3100"}}]`,
			"spec.destinations[0].shipper",
			"leave them out with kind OpenTelemetryCollector",
		),
		Entry("Loki URL without a scheme", `destinations: [{name: loki, type: Loki, loki: {url: "loki:3100"}}]`,
			"spec.destinations[0].loki.url", "url must be an http or https URL with a host"),
		Entry("Loki URL of another scheme", `destinations: [{name: loki, type: Loki, loki: {url: "ftp://loki"}}]`,
			"spec.destinations[0].loki.url", "url must be an http or https URL with a host"),
		Entry(
			"Loki URL with credentials",
			`destinations: [{name: loki, type: Loki, loki: {url: "https://user:secret@loki"}}]`,
			"spec.destinations[0].loki.url",
			"put credentials in a Secret",
		),
		Entry("Loki URL with a variable the shippers expand",
			`destinations: [{name: loki, type: Loki, loki: {url: "http://loki/${file:/var/run/secrets/kubernetes.io/serviceaccount/token}"}}]`,
			"spec.destinations[0].loki.url", "url must not contain $"),
		Entry("Loki URL with a space", `destinations: [{name: loki, type: Loki, loki: {url: "http://loki:3100/a b"}}]`,
			"spec.destinations[0].loki.url", "url must hold no spaces or control characters"),
		Entry("a selector followed by a LogQL expression that fakes the count",
			`destinations: [{name: out, type: Stdout, loki: {url: "http://loki:3100", selector: '{a="b"} [1s])) * 0 + vector(1e6) + count_over_time({a="b"}'}}]`,
			"spec.destinations[0].loki.selector", "selector must be a LogQL stream selector of matchers only"),
		Entry("a selector with an escape LogQL's strings do not have",
			`destinations: [{name: out, type: Stdout, loki: {url: "http://loki:3100", selector: '{a="b\q"}'}}]`,
			"spec.destinations[0].loki.selector", "matchers only"),
		Entry("a selector with a line filter",
			`destinations: [{name: out, type: Stdout, loki: {url: "http://loki:3100", selector: '{a="b"} |= "x" {c="d"}'}}]`,
			"spec.destinations[0].loki.selector", "matchers only"),
		Entry("a selector with an unterminated string",
			`destinations: [{name: out, type: Stdout, loki: {url: "http://loki:3100", selector: '{a="b\"}'}}]`,
			"spec.destinations[0].loki.selector", "matchers only"),
		Entry("Loki URL with a query", `destinations: [{name: loki, type: Loki, loki: {url: "https://loki/?token=x"}}]`,
			"spec.destinations[0].loki.url", "url must hold no credentials, query or fragment"),
		Entry("empty Loki URL", `destinations: [{name: loki, type: Loki, loki: {url: ""}}]`,
			"spec.destinations[0].loki.url", "should be at least 1 chars long"),
		Entry(
			"Loki tenant with a pipe",
			`destinations: [{name: loki, type: Loki, loki: {url: "http://loki", tenantID: "a|b"}}]`,
			"spec.destinations[0].loki.tenantID",
			"should match",
		),
		Entry(
			"Loki auth with both methods",
			`destinations: [{name: loki, type: Loki, loki: {url: "http://loki", auth: {basic: {secretName: s}, bearerToken: {secretName: s}}}}]`,
			"spec.destinations[0].loki.auth",
			"auth takes exactly one of basic and bearerToken",
		),
		Entry("Loki auth without a method", `destinations: [{name: loki, type: Loki, loki: {url: "http://loki", auth: {}}}]`,
			"spec.destinations[0].loki.auth", "auth takes exactly one of basic and bearerToken"),
		Entry("Loki auth Secret with an invalid name",
			`destinations: [{name: loki, type: Loki, loki: {url: "http://loki", auth: {basic: {secretName: Loki_Auth}}}}]`,
			"spec.destinations[0].loki.auth.basic.secretName", "should match"),
		Entry(
			"Loki auth Secret key with a slash",
			`destinations: [{name: loki, type: Loki, loki: {url: "http://loki", auth: {bearerToken: {secretName: s, key: a/b}}}}]`,
			"spec.destinations[0].loki.auth.bearerToken.key",
			"should match",
		),
		Entry(
			"Loki label with an invalid name",
			`destinations: [{name: loki, type: Loki, loki: {url: "http://loki", labels: {team-a: x}}}]`,
			"spec.destinations[0].loki.labels",
			"label names must be Prometheus label names",
		),
		Entry(
			"Loki label logbench sets",
			`destinations: [{name: loki, type: Loki, loki: {url: "http://loki", labels: {benchmark: x}}}]`,
			"spec.destinations[0].loki.labels",
			"are set by logbench",
		),
		Entry(
			"Loki label value with a comma",
			`destinations: [{name: loki, type: Loki, loki: {url: "http://loki", labels: {team: "a,b"}}}]`,
			"spec.destinations[0].loki.labels.team",
			"should match",
		),
		Entry(
			"more than 8 Loki labels",
			"destinations: [{name: loki, type: Loki, loki: {url: \"http://loki\", labels: {"+flowItems(9, "l%d: v")+"}}}]",
			"spec.destinations[0].loki.labels",
			"must have at most 8 items",
		),
		Entry("format on a CSVLog destination", `destinations: [{name: csvlog, type: CSVLog, format: JSONLog}]`,
			"spec.destinations[0]", "format applies only to destinations of type Stdout"),
		Entry("format on a Stderr destination", `destinations: [{name: stderr, type: Stderr, format: Stderr}]`,
			"spec.destinations[0]", "format applies only to destinations of type Stdout"),
		Entry("unknown Stdout format", `destinations: [{name: stdout, type: Stdout, format: XML}]`,
			"spec.destinations[0].format", "Unsupported value"),
		Entry("destination named baseline beside the automatic baseline",
			`destinations: [{name: baseline, type: CSVLog}]`,
			"spec", "the destination name 'baseline' is reserved"),
		Entry("two destinations of type None", `destinations: [{name: none, type: None}, {name: quiet, type: None}]`,
			"spec", "at most one destination of type None (a baseline) per placement"),
		Entry("a baseline named baseline placed otherwise than the workload, beside the automatic one",
			`destinations: [{name: baseline, type: None, placement: SameNode}, {name: csvlog, type: CSVLog, placement: SameNode}]`,
			"spec", "the destination name 'baseline' is reserved"),
		Entry("a second destination of type None placed as the workload",
			`destinations: [{name: none, type: None}, {name: quiet, type: None, placement: Apart}]`,
			"spec", "at most one destination of type None (a baseline) per placement"),
		Entry("a destination placed apart from the workload without a baseline placed as it is",
			`destinations: [{name: csvlog-same, type: CSVLog, placement: SameNode}]`,
			"spec", "needs a destination of type None with the same placement"),
		Entry("a destination's own placement beside a ramp",
			`{destinations: [{name: none-same, type: None, placement: SameNode}, {name: csvlog-same, type: CSVLog, placement: SameNode}], `+
				`workload: {ramp: {start: 1, max: 4, factor: 2}}}`,
			"spec", "a ramp measures every destination against one baseline"),
		Entry("an unknown destination placement", `destinations: [{name: csvlog, type: CSVLog, placement: Rack}]`,
			"spec.destinations[0].placement", "Unsupported value"),

		// PostgreSQL parameters that logbench sets itself.
		Entry("log_destination parameter", `postgres: {parameters: {log_destination: csvlog}}`,
			"spec.postgres", "use spec.destinations"),
		Entry("logging_collector parameter", `postgres: {parameters: {logging_collector: "off"}}`,
			"spec.postgres", "use spec.destinations"),
		Entry("log_directory parameter", `postgres: {parameters: {log_directory: /tmp}}`,
			"spec.postgres", "use spec.destinations"),
		Entry("log_filename parameter", `postgres: {parameters: {log_filename: pg.log}}`,
			"spec.postgres", "use spec.destinations"),
		Entry("log_truncate_on_rotation parameter", `postgres: {parameters: {log_truncate_on_rotation: "on"}}`,
			"spec.postgres", "use spec.destinations"),
		Entry("log_file_mode parameter", `postgres: {parameters: {log_file_mode: "0600"}}`,
			"spec.postgres", "use spec.destinations"),
		Entry("event_source parameter", `postgres: {parameters: {event_source: PostgreSQL}}`,
			"spec.postgres", "use spec.destinations"),
		Entry("log_rotation_* parameter", `postgres: {parameters: {log_rotation_age: 1d}}`,
			"spec.postgres", "use spec.destinations"),
		Entry("syslog_* parameter", `postgres: {parameters: {syslog_facility: LOCAL0}}`,
			"spec.postgres", "use spec.destinations"),
		Entry("log_statement parameter", `postgres: {parameters: {log_statement: all}}`,
			"spec.postgres", "use spec.logging"),
		Entry("log_min_duration_statement parameter", `postgres: {parameters: {log_min_duration_statement: "0"}}`,
			"spec.postgres", "use spec.logging"),
		Entry("log_duration parameter", `postgres: {parameters: {log_duration: "on"}}`,
			"spec.postgres", "use spec.logging"),
		Entry("log_line_prefix parameter", `postgres: {parameters: {log_line_prefix: "%m "}}`,
			"spec.postgres", "use spec.logging"),
		Entry("track_io_timing parameter", `postgres: {parameters: {track_io_timing: "on"}}`,
			"spec.postgres", "use spec.logging"),
		Entry("application_name parameter", `postgres: {parameters: {application_name: app}}`,
			"spec.postgres", "use spec.logging"),
		Entry("log_connections parameter", `postgres: {parameters: {log_connections: "on"}}`,
			"spec.postgres", "use spec.logging"),
		Entry("log_disconnections parameter", `postgres: {parameters: {log_disconnections: "on"}}`,
			"spec.postgres", "use spec.logging"),

		// PostgreSQL parameters that would add records to the run's sessions, or remove them.
		Entry("log_statement_stats parameter", `postgres: {parameters: {log_statement_stats: "on"}}`,
			"spec.postgres", "what it can predict is in spec.logging"),
		Entry("log_parser_stats parameter", `postgres: {parameters: {log_parser_stats: "on"}}`,
			"spec.postgres", "what it can predict is in spec.logging"),
		Entry("log_planner_stats parameter", `postgres: {parameters: {log_planner_stats: "on"}}`,
			"spec.postgres", "what it can predict is in spec.logging"),
		Entry("log_executor_stats parameter", `postgres: {parameters: {log_executor_stats: "on"}}`,
			"spec.postgres", "what it can predict is in spec.logging"),
		Entry("log_transaction_sample_rate parameter", `postgres: {parameters: {log_transaction_sample_rate: "1"}}`,
			"spec.postgres", "what it can predict is in spec.logging"),
		Entry("log_statement_sample_rate parameter", `postgres: {parameters: {log_statement_sample_rate: "0.5"}}`,
			"spec.postgres", "what it can predict is in spec.logging"),
		Entry("log_min_duration_sample parameter", `postgres: {parameters: {log_min_duration_sample: "0"}}`,
			"spec.postgres", "what it can predict is in spec.logging"),
		Entry("log_lock_waits parameter", `postgres: {parameters: {log_lock_waits: "on", deadlock_timeout: 10ms}}`,
			"spec.postgres", "what it can predict is in spec.logging"),
		Entry("log_temp_files parameter", `postgres: {parameters: {log_temp_files: "0"}}`,
			"spec.postgres", "what it can predict is in spec.logging"),
		Entry("log_min_error_statement parameter", `postgres: {parameters: {log_min_error_statement: error}}`,
			"spec.postgres", "what it can predict is in spec.logging"),
		Entry("debug_print_* parameter", `postgres: {parameters: {debug_print_plan: "on"}}`,
			"spec.postgres", "what it can predict is in spec.logging"),
		Entry("trace_* parameter", `postgres: {parameters: {trace_sort: "on"}}`,
			"spec.postgres", "what it can predict is in spec.logging"),
		Entry("auto_explain.* parameter", `postgres: {parameters: {auto_explain.log_min_duration: "0"}}`,
			"spec.postgres", "what it can predict is in spec.logging"),
		Entry("pgaudit.* parameter", `postgres: {parameters: {pgaudit.log: all}}`,
			"spec.postgres", "what it can predict is in spec.logging"),
		Entry("record-changing parameter in mixed case", `postgres: {parameters: {Log_Lock_Waits: "on"}}`,
			"spec.postgres", "what it can predict is in spec.logging"),
		Entry("log_min_messages that drops the statement records", `postgres: {parameters: {log_min_messages: fatal}}`,
			"spec.postgres", "log_min_messages may be warning, error or log"),
		Entry("log_min_messages that adds debug records", `postgres: {parameters: {LOG_MIN_MESSAGES: debug1}}`,
			"spec.postgres", "log_min_messages may be warning, error or log"),
		Entry("lc_messages in another language", `postgres: {parameters: {lc_messages: de_DE.UTF-8}}`,
			"spec.postgres", "lc_messages must be C, POSIX or an English locale"),
		Entry("logging parameter in upper case", `postgres: {parameters: {LOG_DESTINATION: stderr}}`,
			"spec.postgres", "use spec.destinations"),
		Entry("statement parameter in mixed case", `postgres: {parameters: {Log_Statement: all}}`,
			"spec.postgres", "use spec.logging"),
		Entry("more than 64 parameters", "postgres: {parameters: {"+flowItems(65, `custom.setting_%d: "1"`)+"}}",
			"spec.postgres.parameters", "must have at most 64 items"),

		// What postgresql.conf cannot hold as CloudNativePG writes it: a name as given, a
		// value with its quotes doubled but not its backslashes or newlines.
		Entry("a refused parameter with a trailing space", `postgres: {parameters: {"archive_command ": "true"}}`,
			"spec.postgres", "parameter names must be PostgreSQL parameter names"),
		Entry("a parameter name holding a line", `postgres: {parameters: {"work_mem = 1\narchive_command": "true"}}`,
			"spec.postgres", "parameter names must be PostgreSQL parameter names"),
		Entry("a parameter name with two dots", `postgres: {parameters: {a.b.c: "1"}}`,
			"spec.postgres", "parameter names must be PostgreSQL parameter names"),
		Entry("archive_command", `postgres: {parameters: {archive_command: "true"}}`,
			"spec.postgres", "parameters that run a shell command, load code"),
		Entry("restore_command in upper case", `postgres: {parameters: {RESTORE_COMMAND: "true"}}`,
			"spec.postgres", "parameters that run a shell command, load code"),
		Entry("shared_preload_libraries", `postgres: {parameters: {shared_preload_libraries: auto_explain}}`,
			"spec.postgres", "parameters that run a shell command, load code"),
		Entry("a parameter value holding a line",
			`postgres: {parameters: {work_mem: "64MB'\narchive_command = 'sh -c id"}}`,
			"spec.postgres", "parameter values must hold no control characters"),
		Entry("a parameter value with a carriage return", `postgres: {parameters: {work_mem: "64MB\r"}}`,
			"spec.postgres", "parameter values must hold no control characters"),
		Entry("a parameter value with a backslash", `postgres: {parameters: {work_mem: '64MB\'}}`,
			"spec.postgres", "parameter values must hold no control characters"),
		Entry("a parameter value with a single quote", `postgres: {parameters: {search_path: "public'"}}`,
			"spec.postgres", "parameter values must hold no control characters"),

		// PostgreSQL instances.
		Entry("no instances", `postgres: {instances: 0}`,
			"spec.postgres.instances", "should be greater than or equal to 1"),
		Entry("more than 9 instances", `postgres: {instances: 10}`,
			"spec.postgres.instances", "should be less than or equal to 9"),

		// Storage.
		Entry("empty volume", `postgres: {storage: {size: "0"}}`,
			"spec.postgres.storage.size", "storage size must be greater than 0"),
		Entry("negative volume size", `postgres: {storage: {size: -1Gi}}`,
			"spec.postgres.storage.size", "storage size must be greater than 0"),

		// Logging.
		Entry("unknown statement logging", `logging: {statement: verbose}`,
			"spec.logging.statement", "Unsupported value"),
		Entry("minDurationStatement below -1", `logging: {minDurationStatement: -2}`,
			"spec.logging.minDurationStatement", "should be greater than or equal to -1"),
		Entry("linePrefix without %a", `logging: {linePrefix: "%m [%p] "}`,
			"spec.logging.linePrefix", "linePrefix must contain %a"),
		Entry("linePrefix over 256 characters", `logging: {linePrefix: "%a `+strings.Repeat("x", 254)+`"}`,
			"spec.logging.linePrefix", "may not be more than 256"),
		Entry("linePrefix holding a line", `logging: {linePrefix: "%a\nlog_directory = '/tmp'"}`,
			"spec.logging.linePrefix", "linePrefix must hold no control characters"),
		Entry("linePrefix with a tab", `logging: {linePrefix: "%a\t"}`,
			"spec.logging.linePrefix", "linePrefix must hold no control characters"),
		Entry("linePrefix with a backslash", `logging: {linePrefix: '%a \'}`,
			"spec.logging.linePrefix", "linePrefix must hold no control characters"),
		Entry("linePrefix with a single quote", `logging: {linePrefix: "%a '"}`,
			"spec.logging.linePrefix", "linePrefix must hold no control characters"),

		// Workload.
		Entry("unknown builtin", `workload: {builtin: TPCC}`,
			"spec.workload.builtin", "Unsupported value"),
		Entry("unknown query mode", `workload: {queryMode: Pipelined}`,
			"spec.workload.queryMode", "Unsupported value"),
		Entry("unknown aggregate", `workload: {aggregate: Mean}`,
			"spec.workload.aggregate", "Unsupported value"),
		Entry("scale 0", `workload: {scale: 0}`,
			"spec.workload.scale", "should be greater than or equal to 1"),
		Entry("scale above 100000", `workload: {scale: 100001}`,
			"spec.workload.scale", "should be less than or equal to 100000"),
		Entry("no client counts", `workload: {clients: []}`,
			"spec.workload.clients", "should have at least 1 items"),
		Entry("more than 16 client counts", "workload: {clients: ["+flowItems(17, "%d")+"]}",
			"spec.workload.clients", "must have at most 16 items"),
		Entry("0 clients", `workload: {clients: [0]}`,
			"spec.workload.clients[0]", "should be greater than or equal to 1"),
		Entry("over 1000 clients", `workload: {clients: [1001]}`,
			"spec.workload.clients[0]", "should be less than or equal to 1000"),
		Entry("duplicate client counts", `workload: {clients: [4, 4]}`,
			"spec.workload.clients[1]", "Duplicate value"),
		Entry("negative threads", `workload: {threads: -1}`,
			"spec.workload.threads", "should be greater than or equal to 0"),
		Entry("over 1000 threads", `workload: {threads: 1001}`,
			"spec.workload.threads", "should be less than or equal to 1000"),
		Entry("no repeats", `workload: {repeats: 0}`,
			"spec.workload.repeats", "should be greater than or equal to 1"),
		Entry("over 20 repeats", `workload: {repeats: 21}`,
			"spec.workload.repeats", "should be less than or equal to 20"),
		Entry("duration under 1s", `workload: {duration: 0s}`,
			"spec.workload.duration", "duration must be between 1s and 24h"),
		Entry("duration over 24h", `workload: {duration: 24h1s}`,
			"spec.workload.duration", "duration must be between 1s and 24h"),
		Entry("duration in words", `workload: {duration: 5 minutes}`,
			"spec.workload.duration", "should match"),
		Entry("fractional duration", `workload: {duration: 1.5s}`,
			"spec.workload.duration", "should match"),
		Entry("warm-up in hours", `workload: {warmup: 1h}`,
			"spec.workload.warmup", "should match"),

		// The rest of the spec.
		Entry("drainTimeout over 1h", `drainTimeout: 1h1s`,
			"spec.drainTimeout", "drainTimeout must be between 0s and 1h"),
		Entry("drainTimeout in words", `drainTimeout: one minute`,
			"spec.drainTimeout", "should match"),
		Entry("clusterReadyTimeout of 0s", `clusterReadyTimeout: 0s`,
			"spec.clusterReadyTimeout", "clusterReadyTimeout must be between 1s and 24h"),
		Entry("podStartTimeout of 0s", `podStartTimeout: 0s`,
			"spec.podStartTimeout", "podStartTimeout must be between 1s and 24h"),
		Entry("podStartTimeout past a day", `podStartTimeout: 25h`,
			"spec.podStartTimeout", "podStartTimeout must be between 1s and 24h"),
		Entry("unknown cleanup policy", `cleanup: Sometimes`,
			"spec.cleanup", "Unsupported value"),
		Entry("pgaudit without classes", `logging: {pgaudit: {log: []}}`,
			"spec.logging.pgaudit.log", "should have at least 1 items"),
		Entry("pgaudit class it does not have", `logging: {pgaudit: {log: [select]}}`,
			"spec.logging.pgaudit.log[0]", "Unsupported value"),
		// A destination's own logging.
		Entry("logging on the baseline", `destinations: [{name: none, type: None, logging: {statement: all}}, {name: csv, type: CSVLog}]`,
			"spec.destinations[0]", "a destination of type None is the baseline and logs nothing: it cannot take logging settings"),
		Entry("even settings that log nothing on the baseline", `destinations: [{name: none, type: None, logging: {duration: false}}]`,
			"spec.destinations[0]", "a destination of type None is the baseline and logs nothing"),
		Entry("a destination's unknown log_statement", `destinations: [{name: csv, type: CSVLog, logging: {statement: every}}]`,
			"spec.destinations[0].logging.statement", "Unsupported value"),
		Entry("a destination's minDurationStatement below -1", `destinations: [{name: csv, type: CSVLog, logging: {minDurationStatement: -2}}]`,
			"spec.destinations[0].logging.minDurationStatement", "should be greater than or equal to -1"),
		Entry("a destination's linePrefix without %a", `destinations: [{name: csv, type: CSVLog, logging: {linePrefix: "%m "}}]`,
			"spec.destinations[0].logging.linePrefix", "linePrefix must contain %a"),
		Entry("a destination's linePrefix holding a line", `destinations: [{name: csv, type: CSVLog, logging: {linePrefix: "%a\n"}}]`,
			"spec.destinations[0].logging.linePrefix", "linePrefix must hold no control characters"),
		Entry("a destination's linePrefix with a backslash", `destinations: [{name: csv, type: CSVLog, logging: {linePrefix: '%a \'}}]`,
			"spec.destinations[0].logging.linePrefix", "linePrefix must hold no control characters"),
		Entry("a destination's linePrefix with a single quote", `destinations: [{name: csv, type: CSVLog, logging: {linePrefix: "%a '"}}]`,
			"spec.destinations[0].logging.linePrefix", "linePrefix must hold no control characters"),
		Entry("a destination's pgaudit without classes", `destinations: [{name: csv, type: CSVLog, logging: {pgaudit: {log: []}}}]`,
			"spec.destinations[0].logging.pgaudit.log", "should have at least 1 items"),
		// The user's scripts.
		Entry("scripts beside a builtin", `workload: {builtin: TPCBLike, scripts: {configMap: {name: q}, files: [{key: a.sql}]}}`,
			"spec.workload", "scripts replace the builtin workload"),
		Entry("scripts without files", `workload: {scripts: {configMap: {name: q}, files: []}}`,
			"spec.workload.scripts.files", "should have at least 1 items"),
		Entry("more than 16 scripts", "workload: {scripts: {configMap: {name: q}, files: ["+flowItems(17, "{key: s%d.sql}")+"]}}",
			"spec.workload.scripts.files", "must have at most 16 items"),
		Entry("a script's key with a slash", `workload: {scripts: {configMap: {name: q}, files: [{key: dir/a.sql}]}}`,
			"spec.workload.scripts.files[0].key", "should match"),
		Entry("a script's key starting with ..", `workload: {scripts: {configMap: {name: q}, files: [{key: ..a}]}}`,
			"spec.workload.scripts.files[0].key", "may not be '.' or start with '..'"),
		Entry("a script twice", `workload: {scripts: {configMap: {name: q}, files: [{key: a.sql}, {key: a.sql, weight: 2}]}}`,
			"spec.workload.scripts.files[1]", "Duplicate value"),
		Entry("a weight of 0", `workload: {scripts: {configMap: {name: q}, files: [{key: a.sql, weight: 0}]}}`,
			"spec.workload.scripts.files[0].weight", "should be greater than or equal to 1"),
		Entry("a weight above 1000", `workload: {scripts: {configMap: {name: q}, files: [{key: a.sql, weight: 1001}]}}`,
			"spec.workload.scripts.files[0].weight", "should be less than or equal to 1000"),
		Entry("the init among the scripts", `workload: {scripts: {configMap: {name: q}, files: [{key: a.sql}], init: a.sql}}`,
			"spec.workload.scripts", "give it a key of its own"),
		Entry("a ConfigMap name with upper case", `workload: {scripts: {configMap: {name: Q}, files: [{key: a.sql}]}}`,
			"spec.workload.scripts.configMap.name", "should match"),
	)

	DescribeTable(
		"accepts a valid spec",
		func(specYAML string) {
			Expect(k8sClient.Create(ctx, newBenchmark(specYAML))).To(Succeed())
		},
		Entry("the minimal spec", ``),
		Entry("the user's scripts with weights and an init",
			`workload: {scripts: {configMap: {name: queries.v2}, init: schema.sql, `+
				`files: [{key: read.sql, weight: 1000}, {key: write_1.sql}, {key: .hidden-report.sql, weight: 1}]}}`),
		Entry("a Stdout destination counted in its node agent's Loki, with the default selector",
			`destinations: [{name: out, type: Stdout, format: JSONLog, loki: {url: "http://loki:3100", tenantID: team}}]`),
		Entry("a Stdout destination counted in Loki only, under OpenTelemetry's labels",
			`destinations: [{name: out, type: Stdout, containerLog: Skip, loki: {url: "https://loki.example", `+
				`selector: '{k8s_namespace_name="${namespace}", k8s_pod_name="${pod}", k8s_container_name="${container}"}'}}]`),
		Entry("a selector with every matcher operator and an escaped quote",
			`destinations: [{name: out, type: Stdout, loki: {url: "http://loki:3100", `+
				`selector: '{ app=~"pg-.*" , team!="a\"b", env!~"dev|test",pod="${pod}" }'}}]`),
		Entry("pgaudit with every option", `logging: {pgaudit: {log: [read, write, misc], logParameter: true, logRelation: true}}`),
		Entry("a settings matrix: every field of a destination's own logging",
			`destinations: [{name: none, type: None}, {name: statement, type: CSVLog}, `+
				`{name: both, type: Stderr, logging: {statement: none, minDurationStatement: 0, duration: true, connections: true, `+
				`disconnections: true, trackIOTiming: true, pgaudit: {log: [read]}, linePrefix: "%m %a "}}]`),
		Entry("placements compared in one run, each against a baseline placed as it is",
			`destinations: [{name: csvlog, type: CSVLog}, {name: none-same, type: None, placement: SameNode}, `+
				`{name: csvlog-same, type: CSVLog, placement: SameNode}]`),
		Entry("a destination placed as the workload, named", `destinations: [{name: csvlog, type: CSVLog, placement: Apart}]`),
		Entry(
			"a listed baseline named baseline",
			`destinations: [{name: baseline, type: None}, {name: csvlog, type: CSVLog}]`,
		),
		Entry("a destination named baseline without the automatic baseline",
			`{baseline: {enabled: false}, destinations: [{name: baseline, type: CSVLog}]}`),
		Entry(
			"every Stdout format",
			`destinations: [{name: a, type: Stdout, format: CSVLog}, {name: b, type: Stdout, format: Stderr}, {name: c, type: Stdout, format: JSONLog}]`,
		),
		Entry("Syslog destinations with their defaults, configured, and forwarding",
			`destinations: [{name: a, type: Syslog}, {name: b, type: Syslog, syslog: {facility: LOCAL7, ident: pg, sequenceNumbers: false, splitMessages: false}}, `+
				`{name: c, type: Syslog, syslog: {transport: udp}, shipper: {output: Stdout}}]`),
		Entry("rsyslog with its defaults, rate limited, and in its own image",
			`destinations: [{name: a, type: Syslog, syslog: {receiver: Rsyslog}}, `+
				`{name: b, type: Syslog, syslog: {receiver: Rsyslog, rateLimit: {intervalSeconds: 5, burst: 200}}}, `+
				`{name: c, type: Syslog, syslog: {receiver: Rsyslog, transport: local}, shipper: {image: "registry.example/rsyslog:8"}}]`),
		Entry("12 destinations", "destinations: ["+flowItems(12, "{name: d%d, type: JSONLog}")+"]"),
		Entry("the bounds of the durations", `{workload: {duration: 24h}, drainTimeout: 0s, clusterReadyTimeout: 1s}`),
		Entry("a day to become ready", `clusterReadyTimeout: 24h`),
		Entry("the bounds of podStartTimeout", `podStartTimeout: 1s`),
		Entry("a day for a pod to start", `podStartTimeout: 24h`),
		Entry("durations in hours, minutes and seconds", `{workload: {duration: 1h2m3s}, drainTimeout: 1h}`),
		Entry(
			"parameters logbench leaves alone",
			`postgres: {parameters: {shared_buffers: 256MB, log_min_messages: warning}}`,
		),
		Entry(
			"parameters of every form PostgreSQL's configuration file takes",
			`postgres: {parameters: {work_mem: 64MB, Maintenance_Work_Mem: 1GB, pg_stat_statements.max: "10000", `+
				`search_path: '"$user", public', _private.x1: "on"}}`,
		),
		Entry("a line prefix with every character but the refused ones",
			`logging: {linePrefix: "%m [%p] %q%u@%d %a <>&\"$%%;,:/ é "}`),
		Entry(
			"logging parameters that leave the run's records as they are",
			`postgres: {parameters: {log_min_messages: LOG, log_error_verbosity: verbose, lc_messages: en_US.UTF-8, deadlock_timeout: 10ms, log_checkpoints: "on", log_autovacuum_min_duration: "0"}}`,
		),
		Entry("lc_messages C", `postgres: {parameters: {lc_messages: C.UTF-8}}`),
		Entry("connections and disconnections logged", `logging: {connections: true, disconnections: true}`),
		Entry("minDurationStatement off", `logging: {minDurationStatement: -1}`),
		Entry("a volume size in bytes", `postgres: {storage: {size: 1073741824}}`),
		Entry("a FluentBitSidecar with the shipper's defaults", `destinations: [{name: fb, type: FluentBitSidecar}]`),
		Entry(
			"a FluentBitSidecar with every shipper field",
			`destinations: [{name: fb, type: FluentBitSidecar, shipper: {kind: FluentBit, image: "cr.fluentbit.io/fluent/fluent-bit:5.0.3", format: JSONLog, output: Stdout, memBufLimit: 64Mi, storageType: filesystem, resources: {limits: {cpu: 500m}}}}]`,
		),
		Entry(
			"a FluentBitSidecar shipping to Loki",
			`destinations: [{name: fb, type: FluentBitSidecar, shipper: {output: Loki}, loki: {url: "https://logs.example.com/loki"}}]`,
		),
		Entry(
			"a Loki destination with every Loki field",
			`destinations: [{name: loki, type: Loki, loki: {url: "http://loki.monitoring:3100", tenantID: "bench-1", auth: {basic: {secretName: loki-auth, usernameKey: user, passwordKey: pass}}, labels: {team: db, env: lab}}}]`,
		),
		Entry(
			"a Loki destination with a bearer token shipped by the OpenTelemetry Collector",
			`destinations: [{name: loki, type: Loki, shipper: {kind: OpenTelemetryCollector, format: JSONLog}, loki: {url: "https://loki", auth: {bearerToken: {secretName: loki-token}}}}]`,
		),
	)

	It("refuses an extension's parameter for the records it would add, not for its name", func() {
		err := k8sClient.Create(ctx, newBenchmark(`postgres: {parameters: {auto_explain.log_min_duration: "0"}}`))
		Expect(err).To(MatchError(ContainSubstring("what it can predict is in spec.logging")))
		Expect(err).NotTo(MatchError(ContainSubstring("must be PostgreSQL parameter names")))
	})

	It("accepts every sample of config/samples, applied server-side with the Secrets it holds", func() {
		root, err := testenv.RepoRoot()
		Expect(err).NotTo(HaveOccurred())
		dir := filepath.Join(root, "config", "samples")
		samples, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		Expect(err).NotTo(HaveOccurred())
		var kustomization struct {
			Resources []string `json:"resources"`
		}
		content, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(yaml.Unmarshal(content, &kustomization)).To(Succeed())
		files := []string{}
		applied := map[string]string{}
		benchmarks := 0
		for _, path := range samples {
			if filepath.Base(path) == "kustomization.yaml" {
				continue
			}
			files = append(files, filepath.Base(path))
			for _, object := range sampleObjects(path) {
				id := object.GetKind() + "/" + object.GetName()
				Expect(applied).NotTo(HaveKey(id), "%s and %s both hold %s: kubectl apply -k would refuse them", applied[id], path, id)
				applied[id] = path
				object.SetNamespace(testNamespace)
				Expect(k8sClient.Patch(ctx, object, client.Apply, client.FieldOwner("logbench-samples"), client.ForceOwnership)).
					To(Succeed(), "%s: %s", path, id)
				if object.GetKind() == "LoggingBenchmark" {
					benchmarks++
				}
			}
		}
		Expect(kustomization.Resources).To(ConsistOf(files), "config/samples/kustomization.yaml must list every sample")
		Expect(benchmarks).To(BeNumerically(">=", 10), "config/samples holds fewer LoggingBenchmarks than expected")
	})

	It("fills in the documented defaults", func() {
		benchmark := newBenchmark(``)
		Expect(k8sClient.Create(ctx, benchmark)).To(Succeed())
		spec, err := json.Marshal(benchmark.Object["spec"])
		Expect(err).NotTo(HaveOccurred())
		Expect(spec).To(MatchYAML(`
postgres:
  instances: 1
  storage: {size: 1Gi}
logging:
  statement: all
  minDurationStatement: -1
  linePrefix: "%m [%p] %q%u@%d %a "
destinations: [{name: csvlog, type: CSVLog}]
baseline: {enabled: true}
workload:
  builtin: SelectOnly
  queryMode: Prepared
  scale: 10
  clients: [1, 4]
  threads: 0
  duration: 30s
  warmup: 5s
  repeats: 3
  aggregate: Median
  placement: Apart
drainTimeout: 60s
cleanup: OnSuccess
`))
	})

	It("gives the default volume size to a typed object that leaves it unset", func() {
		benchmark := &v1alpha1.LoggingBenchmark{
			ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, GenerateName: "admission-"},
			Spec: v1alpha1.LoggingBenchmarkSpec{
				Destinations: []v1alpha1.Destination{{Name: "csvlog", Type: v1alpha1.DestinationCSVLog}},
				Workload:     v1alpha1.WorkloadSpec{Duration: metav1.Duration{Duration: time.Minute}},
			},
		}
		Expect(k8sClient.Create(ctx, benchmark)).To(Succeed())
		Expect(benchmark.Spec.Postgres.Storage.Size.String()).To(Equal("1Gi"))
	})

	Describe("after creation", func() {
		var benchmark *v1alpha1.LoggingBenchmark

		BeforeEach(func() {
			created := newBenchmark(`destinations: [{name: stderr, type: Stderr}, {name: stdout, type: Stdout}]`)
			Expect(k8sClient.Create(ctx, created)).To(Succeed())
			benchmark = &v1alpha1.LoggingBenchmark{}
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(created), benchmark)).To(Succeed())
		})

		DescribeTable("rejects a change of the spec",
			func(change func(*v1alpha1.LoggingBenchmarkSpec), message string) {
				change(&benchmark.Spec)
				err := k8sClient.Update(ctx, benchmark)
				Expect(err).To(HaveOccurred())
				Expect(err.Error()).To(ContainSubstring(message))
			},
			Entry("postgres", func(spec *v1alpha1.LoggingBenchmarkSpec) { spec.Postgres.Instances = 2 },
				"postgres is immutable"),
			Entry("logging", func(spec *v1alpha1.LoggingBenchmarkSpec) { spec.Logging.Statement = v1alpha1.StatementDDL },
				"logging is immutable"),
			Entry("destinations", func(spec *v1alpha1.LoggingBenchmarkSpec) { spec.Destinations = spec.Destinations[:1] },
				"destinations are immutable"),
			Entry("baseline", func(spec *v1alpha1.LoggingBenchmarkSpec) { spec.Baseline.Enabled = false },
				"baseline is immutable"),
			Entry("workload", func(spec *v1alpha1.LoggingBenchmarkSpec) { spec.Workload.Repeats = 5 },
				"workload is immutable"),
			Entry("drainTimeout", func(spec *v1alpha1.LoggingBenchmarkSpec) { spec.DrainTimeout.Duration *= 2 },
				"drainTimeout is immutable"),
		)

		// kubectl patch and kubectl edit send only the changed fields, as a merge patch does.
		It("accepts a change of the cleanup policy and of the timeouts of a cluster's and a pod's start", func() {
			patch := client.MergeFrom(benchmark.DeepCopy())
			benchmark.Spec.Cleanup = v1alpha1.CleanupNever
			benchmark.Spec.ClusterReadyTimeout = &metav1.Duration{Duration: 20 * time.Minute}
			benchmark.Spec.PodStartTimeout = &metav1.Duration{Duration: 5 * time.Minute}
			Expect(k8sClient.Patch(ctx, benchmark, patch)).To(Succeed())
		})

		It("accepts a status update from a typed client, as the operator sends it", func() {
			benchmark.Status.Phase = v1alpha1.PhaseProvisioning
			Expect(k8sClient.Status().Update(ctx, benchmark)).To(Succeed())
		})
	})
})
