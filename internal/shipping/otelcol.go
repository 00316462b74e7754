package shipping

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/logbench/logbench/api/v1alpha1"
)

// CollectorMetricsPort serves the OpenTelemetry Collector's own metrics in Prometheus
// format, on /metrics.
const CollectorMetricsPort = 8888

// Component names of the collector's pipeline: the receiver and exporter labels of
// its metrics.
const (
	collectorReceiver      = "filelog"
	collectorExporter      = "otlphttp"
	collectorAuthenticator = "basicauth/loki"
)

// CollectorConfig returns the sidecar's OpenTelemetry Collector configuration for a Loki
// destination: the filelog receiver reads the destination's log file, the batch processor
// groups records, and the otlphttp exporter pushes them to Loki's native OTLP endpoint.
// The collector needs the filelog receiver, the batch processor, the otlphttp exporter
// and, with basic auth, the basicauth extension (all in the contrib distribution).
func CollectorConfig(t Target) ([]byte, error) {
	loki := t.Destination.Loki
	if loki == nil {
		return nil, fmt.Errorf("destination %s ships to Loki but has no loki settings", t.Destination.Name)
	}
	// Resource attributes: service.namespace and service.name become Loki index labels
	// by default; the others are stored as structured metadata.
	resource := map[string]any{
		"service.namespace":    t.Namespace,
		"service.name":         t.collectorServiceName(),
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
				"port": CollectorMetricsPort,
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
