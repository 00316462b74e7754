package shipping

import (
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/logbench/logbench/api/v1alpha1"
)

// otelCollector ships with the OpenTelemetry Collector, to Loki's native OTLP endpoint
// only.
type otelCollector struct{}

const (
	// collectorMetricsPort serves the collector's own metrics in Prometheus format, on
	// collectorMetricsPath.
	collectorMetricsPort = 8888
	collectorMetricsPath = "/metrics"

	// Component names of the collector's pipeline: the receiver and exporter labels of
	// its metrics.
	collectorReceiver      = "filelog"
	collectorExporter      = "otlphttp"
	collectorAuthenticator = "basicauth/loki"

	// csvlogRecordLine matches a record's first line up to its process_id: log_time, then
	// user_name and database_name, each empty or quoted with its quotes doubled inside,
	// then a number. The collector's multiline reader cannot count quotes across lines;
	// a line inside a quoted field has its quotes doubled, so only a contrived one (two
	// empty fields after a timestamp) still passes for a record's start.
	csvlogRecordLine = `^` + csvlogRecordStart + `[A-Za-z0-9+:-]+,(?:"(?:[^"]|"")*")?,(?:"(?:[^"]|"")*")?,\d+,`
)

func (otelCollector) DefaultImage() string { return "otel/opentelemetry-collector-contrib:0.145.0" }

func (otelCollector) Args(configFile string) []string { return []string{"--config=" + configFile} }

func (otelCollector) MetricsPort() int { return collectorMetricsPort }

func (otelCollector) MetricsPath() string { return collectorMetricsPath }

// Config is the collector's configuration for a Loki destination: the filelog receiver
// reads the destination's log file, the batch processor groups records, and the otlphttp
// exporter pushes them to Loki's native OTLP endpoint. The collector needs the filelog
// receiver, the batch processor, the otlphttp exporter and, with basic auth, the
// basicauth extension (all in the contrib distribution).
func (otelCollector) Config(t Target) ([]byte, error) {
	loki := t.Destination.Loki
	if loki == nil {
		return nil, fmt.Errorf("destination %s ships to Loki but has no loki settings", t.Destination.Name)
	}
	// Resource attributes: service.namespace and service.name become Loki index labels
	// by default; the others are stored as structured metadata.
	resource := map[string]any{
		"service.namespace":    t.Namespace,
		"service.name":         collectorServiceName(t),
		"logbench.benchmark":   t.Benchmark,
		"logbench.destination": t.Destination.Name,
	}
	for _, l := range t.extraLabels() {
		resource[l.name] = l.value
	}
	filelog := map[string]any{
		"include": []string{t.logFile()},
		// PostgreSQL creates the file after the collector starts.
		"start_at": "beginning",
		"resource": resource,
	}
	if t.Destination.EffectiveShipper().Format == v1alpha1.FormatCSVLog {
		filelog["multiline"] = map[string]any{"line_start_pattern": csvlogRecordLine}
	}

	headers := map[string]any{}
	if loki.TenantID != "" {
		headers["X-Scope-OrgID"] = loki.TenantID
	}
	exporter := map[string]any{"endpoint": strings.TrimSuffix(loki.URL, "/") + "/otlp"}
	service := map[string]any{
		"pipelines": map[string]any{"logs": map[string]any{
			"receivers":  []string{collectorReceiver},
			"processors": []string{"batch"},
			"exporters":  []string{collectorExporter},
		}},
		"telemetry": map[string]any{"metrics": map[string]any{"readers": []any{
			map[string]any{"pull": map[string]any{"exporter": map[string]any{"prometheus": map[string]any{
				"host": "0.0.0.0",
				"port": collectorMetricsPort,
			}}}},
		}}},
	}
	config := map[string]any{
		"receivers":  map[string]any{collectorReceiver: filelog},
		"processors": map[string]any{"batch": map[string]any{}},
		"exporters":  map[string]any{collectorExporter: exporter},
		"service":    service,
	}
	if auth := loki.Auth; auth != nil && auth.Basic != nil {
		config["extensions"] = map[string]any{collectorAuthenticator: map[string]any{"client_auth": map[string]any{
			"username": "${env:" + envLokiUsername + "}",
			"password": "${env:" + envLokiPassword + "}",
		}}}
		service["extensions"] = []string{collectorAuthenticator}
		exporter["auth"] = map[string]any{"authenticator": collectorAuthenticator}
	} else if auth != nil && auth.BearerToken != nil {
		headers["Authorization"] = "Bearer ${env:" + envLokiBearerToken + "}"
	}
	if len(headers) > 0 {
		exporter["headers"] = headers
	}
	return yaml.Marshal(config)
}

// collectorServiceName is the OTLP resource attribute service.name of the records the
// collector ships: with service.namespace it is among the attributes Loki indexes by
// default (distributor.otlp.default_resource_attributes_as_index_labels), as
// service_name and service_namespace, so no Loki configuration is needed to select them.
func collectorServiceName(t Target) string {
	return "logbench-" + t.Benchmark + "-" + t.Destination.Name
}

func (otelCollector) LokiSelector(t Target) string {
	return fmt.Sprintf(`{service_namespace=%q, service_name=%q}`, t.Namespace, collectorServiceName(t))
}

// exporterLabel names the exporter of the collector's exporter counters.
const exporterLabel = "exporter"

// collectorCounters are the collector's own log record counters; since the collector
// exports them through the OpenTelemetry SDK, counters carry a _total suffix, which older
// collectors left out, so names are matched without it.
var collectorCounters = map[string]counterRule{
	"otelcol_receiver_accepted_log_records":       {"receiver", toRead},
	"otelcol_exporter_sent_log_records":           {exporterLabel, sent},
	"otelcol_exporter_send_failed_log_records":    {exporterLabel, dropped},
	"otelcol_exporter_enqueue_failed_log_records": {exporterLabel, dropped},
}

// ParseMetrics reads the collector's Prometheus /metrics page.
func (otelCollector) ParseMetrics(page io.Reader) (ShipperMetrics, error) {
	return parseCounters(page, collectorCounters)
}
