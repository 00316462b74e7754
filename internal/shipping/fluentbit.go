package shipping

import (
	"fmt"
	"io"
	"net/url"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/workload"
)

// fluentBit ships with Fluent Bit, to any output of ShipperOutput.
type fluentBit struct{}

const (
	// fluentBitMetricsPort serves Fluent Bit's HTTP API, whose fluentBitMetricsPath
	// counts the records read, sent, retried and dropped.
	fluentBitMetricsPort = 2020
	fluentBitMetricsPath = "/api/v2/metrics/prometheus"

	// Aliases of the pipeline's plugins: the name label of their metrics.
	fluentBitInput  = "postgresql"
	fluentBitOutput = "shipped"

	// csvlogParser joins the lines of a csvlog record: a quoted field may hold newlines,
	// and a record's first line starts with its log_time.
	csvlogParser = "logbench_csvlog"
	// evenQuotes and oddQuotes match a whole line by the parity of its double quotes.
	// csvlog doubles a quote inside a quoted field and never escapes a newline, so a line
	// ends inside a quoted field exactly when the record's quotes so far are odd: only
	// then does the next line continue the record, even when it starts like a log_time.
	evenQuotes = `[^"]*(?:"[^"]*"[^"]*)*$`
	oddQuotes  = `[^"]*"[^"]*(?:"[^"]*"[^"]*)*$`
)

func (fluentBit) DefaultImage() string { return "cr.fluentbit.io/fluent/fluent-bit:5.0.3" }

func (fluentBit) Args(configFile string) []string { return []string{"-c", configFile} }

func (fluentBit) MetricsPort() int { return fluentBitMetricsPort }

func (fluentBit) MetricsPath() string { return fluentBitMetricsPath }

// Config is Fluent Bit's configuration in its YAML format: tail the destination's log
// file, keep the records of the benchmark's runs, send them to the destination's output,
// and serve metrics on fluentBitMetricsPort.
func (fluentBit) Config(t Target) ([]byte, error) {
	if ForwardsSyslog(t.Destination) {
		sidecar, _, err := syslogForwardingConfigs(t, t.SyslogReceiverHost())
		return sidecar, err
	}
	output, err := fluentBitOutputConfig(t, t.Destination.EffectiveShipper().Output)
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(fluentBitConfig(t, output))
}

// fluentBitConfig is the configuration of the target's sidecar sending to output.
func fluentBitConfig(t Target, output map[string]any) map[string]any {
	shipper := t.Destination.EffectiveShipper()
	service := fluentBitService()
	tail := map[string]any{
		"name":  "tail", //nolint:goconst // Fluent Bit's configuration keys, spelled as its documentation does
		"alias": fluentBitInput,
		"tag":   fluentBitInput,
		"path":  t.logFile(),
		// PostgreSQL creates the file after the sidecar starts: read it whole, and keep
		// the offset on the buffer volume so that a restarted sidecar does not read it
		// again.
		"read_from_head":   "true",
		"db":               bufferMountPath + "/tail.db",
		"refresh_interval": 1,
		// A record longer than the buffer would make tail stop following the file.
		"buffer_max_size": "1M",
		"storage.type":    string(shipper.StorageType),
	}
	if shipper.MemBufLimit != nil {
		tail["mem_buf_limit"] = fmt.Sprint(shipper.MemBufLimit.Value())
	}
	config := map[string]any{"service": service}
	if shipper.Format == v1alpha1.FormatCSVLog && t.Destination.Type != v1alpha1.DestinationSyslog {
		tail["multiline.parser"] = csvlogParser
		config["multiline_parsers"] = []any{map[string]any{
			"name":          csvlogParser,
			"type":          "regex", //nolint:goconst // a parser type and a key of Fluent Bit's configuration
			"flush_timeout": 1000,
			"rules":         csvlogRules(),
		}}
	}
	if shipper.StorageType == v1alpha1.StorageFilesystem {
		service["storage.path"] = bufferMountPath + "/storage"
		service["storage.metrics"] = "on"
	}
	input := tail
	// Only the records of the benchmark's runs are shipped, so that the output's
	// counters hold no checkpoint or connection records to confuse the accounting.
	filter := map[string]any{
		"name":  "grep",
		"match": fluentBitInput,
		"regex": "log " + workload.TagPattern(t.Destination.Name),
	}
	if t.Destination.Type == v1alpha1.DestinationSyslog {
		input, filter = syslogInput(shipper.StorageType), syslogFilter(t.Destination)
		config["parsers"] = syslogParsers()
	}
	config["pipeline"] = map[string]any{
		"inputs":  []any{input},
		"filters": []any{filter},
		"outputs": []any{output},
	}
	return config
}

// fluentBitService is the service section: flush every second, metrics on
// fluentBitMetricsPort.
func fluentBitService() map[string]any {
	return map[string]any{
		"flush":       1,
		"log_level":   "info",
		"http_server": "on",
		"http_listen": "0.0.0.0",
		"http_port":   fluentBitMetricsPort,
		// Retries wait a random time between scheduler.base (5 s) and the cap: capped at
		// the base, every retry comes 5 s after its failure, so that a drain, which waits
		// while records wait for a retry (bench.InFlight), is not held longer.
		"scheduler.cap": 5,
	}
}

// csvlogRules track whether a line ends inside a quoted field: a record complete at the
// end of a line takes no continuation (the never-matching rule of "complete" ends it),
// and one inside a quoted field takes every next line until the field closes.
func csvlogRules() []any {
	rule := func(state, regex, next string) map[string]any {
		return map[string]any{"state": state, "regex": "/" + regex + "/", "next_state": next}
	}
	return []any{
		rule("start_state", "^"+csvlogRecordStart+evenQuotes, "complete"),
		rule("start_state", "^"+csvlogRecordStart+oddQuotes, "in_quoted_field"),
		rule("in_quoted_field", "^"+evenQuotes, "in_quoted_field"),
		rule("in_quoted_field", "^"+oddQuotes, "complete"),
		rule("complete", "(?!)", "complete"),
	}
}

func fluentBitOutputConfig(t Target, output v1alpha1.ShipperOutput) (map[string]any, error) {
	plugin := map[string]any{"alias": fluentBitOutput, "match": fluentBitInput}
	switch output {
	case v1alpha1.OutputNull:
		plugin["name"] = "null"
	case v1alpha1.OutputStdout:
		plugin["name"] = "stdout"
		plugin["format"] = "json_lines"
	case v1alpha1.OutputLoki:
		if err := addLokiOutput(plugin, t); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown shipper output %q", output)
	}
	return plugin, nil
}

// addLokiOutput configures Fluent Bit's loki output plugin: host, port and TLS from the
// URL, the push path under its path prefix, and credentials from the environment.
func addLokiOutput(plugin map[string]any, t Target) error {
	loki := t.Destination.Loki
	if loki == nil {
		return fmt.Errorf("destination %s ships to Loki but has no loki settings", t.Destination.Name)
	}
	endpoint, err := url.Parse(loki.URL)
	if err != nil {
		return fmt.Errorf("loki.url: %w", err)
	}
	secure := endpoint.Scheme == "https"
	port := endpoint.Port()
	if port == "" {
		port = map[bool]string{true: "443", false: "80"}[secure]
	}
	var labels []string
	for _, l := range append(fluentBitStreamLabels(t), t.extraLabels()...) {
		labels = append(labels, l.name+"="+l.value)
	}
	plugin["name"] = "loki"
	plugin["host"] = endpoint.Hostname()
	plugin["port"] = port
	plugin["uri"] = strings.TrimSuffix(endpoint.Path, "/") + "/loki/api/v1/push"
	plugin["tls"] = onOff(secure)
	plugin["tls.verify"] = onOff(secure)
	plugin["labels"] = strings.Join(labels, ", ")
	plugin["line_format"] = "json"
	if loki.TenantID != "" {
		plugin["tenant_id"] = loki.TenantID
	}
	if auth := loki.Auth; auth != nil && auth.Basic != nil {
		plugin["http_user"] = "${" + envLokiUsername + "}"
		plugin["http_passwd"] = "${" + envLokiPassword + "}"
	} else if auth != nil && auth.BearerToken != nil {
		plugin["bearer_token"] = "${" + envLokiBearerToken + "}"
	}
	return nil
}

// fluentBitStreamLabels are the Loki stream labels by which the records of one
// destination of one benchmark are selected.
func fluentBitStreamLabels(t Target) []label {
	return []label{
		{"job", "logbench"},
		{"namespace", t.Namespace},
		{"benchmark", t.Benchmark},
		{"destination", t.Destination.Name},
	}
}

func (fluentBit) LokiSelector(t Target) string {
	labels := fluentBitStreamLabels(t)
	matchers := make([]string, 0, len(labels))
	for _, l := range labels {
		matchers = append(matchers, fmt.Sprintf("%s=%q", l.name, l.value))
	}
	return "{" + strings.Join(matchers, ", ") + "}"
}

// fluentBitCounters are Fluent Bit's record counters (administration/monitoring, v2
// metrics), labelled by plugin alias.
var fluentBitCounters = map[string]counterRule{
	"fluentbit_input_records_total":          {"name", toRead},
	"fluentbit_filter_drop_records_total":    {"name", toFiltered},
	"fluentbit_input_ingestion_paused":       {"name", toPaused},
	"fluentbit_output_proc_records_total":    {"name", sent},
	"fluentbit_output_dropped_records_total": {"name", dropped},
	"fluentbit_output_retried_records_total": {"name", retried},
}

// ParseMetrics reads Fluent Bit's /api/v2/metrics/prometheus (or v1) page.
func (fluentBit) ParseMetrics(page io.Reader) (ShipperMetrics, error) {
	return parseCounters(page, fluentBitCounters)
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}
