// Package shipping holds what a shipping destination (FluentBitSidecar, Loki) needs
// beside PostgreSQL: the server settings that write the log file the sidecar reads, the
// sidecar's Fluent Bit or OpenTelemetry Collector configuration, the CloudNativePG pod
// patch that adds the sidecar, and the accounting of what the shipper and Loki report.
// Everything here is pure but the Loki client and the shipper scraper.
package shipping

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/logbench/logbench/api/v1alpha1"
)

// Pinned official images of the shippers, used when the destination names none.
const (
	DefaultFluentBitImage = "cr.fluentbit.io/fluent/fluent-bit:5.0.3"
	DefaultCollectorImage = "otel/opentelemetry-collector-contrib:0.153.0"
)

const (
	// LogDirectory is where PostgreSQL writes the file the sidecar reads, on the instance
	// pod's scratch volume; CloudNativePG's own FIFOs in /controller/log keep their one
	// reader, the instance manager.
	LogDirectory = scratchMountPath + "/logbench"
	// logFileName is log_filename: fixed, so the shipper follows one file that a size
	// rotation reopens and appends to, instead of discovering new ones late.
	logFileName = "logbench.log"

	// scratchVolume is CloudNativePG's emptyDir mounted at /controller in instance pods
	// (pkg/specs/volumes.go, v1.30.0).
	scratchVolume    = "scratch-data"
	scratchMountPath = "/controller"
)

// ServerSettings returns the settings, applied with ALTER SYSTEM, that make PostgreSQL
// write the destination's file for its shipper.
func ServerSettings(d v1alpha1.Destination) map[string]string {
	return map[string]string{
		"log_destination": d.EffectiveShipper().Format.LogDestination(),
		"log_directory":   LogDirectory,
		"log_filename":    logFileName,
	}
}

// Target is the shipping destination of one benchmark.
type Target struct {
	Namespace   string
	Benchmark   string
	Destination v1alpha1.Destination
}

// logFile is the path PostgreSQL writes: it swaps log_filename's .log suffix for the
// format's own.
func (t Target) logFile() string {
	suffix := map[v1alpha1.LogFormat]string{v1alpha1.FormatCSVLog: ".csv", v1alpha1.FormatJSONLog: ".json"}
	name := strings.TrimSuffix(logFileName, ".log") + suffix[t.Destination.EffectiveShipper().Format]
	return path.Join(LogDirectory, name)
}

// Image is the shipper's image: the destination's own or the kind's pinned default.
func (t Target) Image() string {
	shipper := t.Destination.EffectiveShipper()
	switch {
	case shipper.Image != "":
		return shipper.Image
	case shipper.Kind == v1alpha1.ShipperOpenTelemetryCollector:
		return DefaultCollectorImage
	}
	return DefaultFluentBitImage
}

// Config returns the configuration of the destination's shipper, the content of its
// ConfigMap under ConfigKey.
func Config(t Target) ([]byte, error) {
	if t.Destination.EffectiveShipper().Kind == v1alpha1.ShipperOpenTelemetryCollector {
		return CollectorConfig(t)
	}
	return FluentBitConfig(t)
}

// selectingLabels are the Loki stream labels by which Fluent Bit's records of one
// destination of one benchmark are selected.
func (t Target) selectingLabels() []label {
	return []label{
		{"job", "logbench"},
		{"namespace", t.Namespace},
		{"benchmark", t.Benchmark},
		{"destination", t.Destination.Name},
	}
}

func (t Target) extraLabels() []label {
	var extra []label
	if t.Destination.Loki != nil {
		for name, value := range t.Destination.Loki.Labels {
			extra = append(extra, label{name, string(value)})
		}
	}
	slices.SortFunc(extra, func(a, b label) int { return strings.Compare(a.name, b.name) })
	return extra
}

type label struct{ name, value string }

// collectorServiceName is the OTLP resource attribute service.name of the records an
// OpenTelemetry Collector ships: with service.namespace it is among the attributes Loki
// indexes by default (distributor.otlp.default_resource_attributes_as_index_labels), as
// service_name and service_namespace, so no Loki configuration is needed to select them.
func (t Target) collectorServiceName() string {
	return "logbench-" + t.Benchmark + "-" + t.Destination.Name
}

// LokiSelector is the LogQL stream selector of the destination's records.
func (t Target) LokiSelector() string {
	if t.Destination.EffectiveShipper().Kind == v1alpha1.ShipperOpenTelemetryCollector {
		return fmt.Sprintf(`{service_namespace=%q, service_name=%q}`, t.Namespace, t.collectorServiceName())
	}
	var matchers []string
	for _, l := range t.selectingLabels() {
		matchers = append(matchers, fmt.Sprintf("%s=%q", l.name, l.value))
	}
	return "{" + strings.Join(matchers, ", ") + "}"
}

// Environment variables of the sidecar holding Loki's credentials, from secretKeyRefs:
// the configurations name the variables, never the values.
const (
	envLokiUsername    = "LOKI_USERNAME"
	envLokiPassword    = "LOKI_PASSWORD"
	envLokiBearerToken = "LOKI_BEARER_TOKEN"
)
