// Package shipping holds what a shipping destination (FluentBitSidecar, Loki) needs
// beside PostgreSQL: the server settings that write the log file the sidecar reads, the
// sidecar's configuration, the CloudNativePG pod patch that adds the sidecar, and the
// accounting of what the shipper and Loki report. What differs between shipper kinds
// lies behind Shipper, one file each: fluentbit.go, otelcol.go. Everything here is pure
// but the Loki client and the shipper scraper.
package shipping

import (
	"cmp"
	"io"
	"path"
	"slices"
	"strings"

	"github.com/logbench/logbench/api/v1alpha1"
)

// Shipper is what differs between the programs that ship a destination's records: each
// kind of the API has one, in its own file, and the rest of the package asks it rather
// than comparing kinds.
type Shipper interface {
	// DefaultImage is the pinned official image, used when the destination names none.
	DefaultImage() string
	// Config returns the target's configuration, the content of its ConfigMap under
	// ConfigKey.
	Config(t Target) ([]byte, error)
	// Args are the container's arguments that load the configuration at configFile.
	Args(configFile string) []string
	// MetricsPort and MetricsPath locate the page of the shipper's own counters.
	MetricsPort() int
	MetricsPath() string
	// ParseMetrics reads that page into the counters the accounting compares: its kind's
	// names for records read, filtered, sent, dropped and retried.
	ParseMetrics(page io.Reader) (ShipperMetrics, error)
	// LokiSelector is the LogQL stream selector of the target's records in Loki.
	LokiSelector(t Target) string
}

// shippers maps every kind of v1alpha1.ShipperKinds to its Shipper; a test keeps it
// complete.
var shippers = map[v1alpha1.ShipperKind]Shipper{
	v1alpha1.ShipperFluentBit:              fluentBit{},
	v1alpha1.ShipperOpenTelemetryCollector: otelCollector{},
}

// shipperFor returns the Shipper of kind. A kind without one, such as the empty kind of
// a ShipperScraper built without it, gets Fluent Bit's, as the API's default kind.
func shipperFor(kind v1alpha1.ShipperKind) Shipper {
	if shipper, ok := shippers[kind]; ok {
		return shipper
	}
	return shippers[v1alpha1.ShipperFluentBit]
}

const (
	// LogDirectory is where PostgreSQL writes file destinations, the file the sidecar
	// reads among them: an emptyDir of its own (InstancePodPatch) that the postgres
	// container mounts read-write and the shipper read-only, so that the shipper sees
	// neither CloudNativePG's certificates nor its sockets on the scratch volume.
	LogDirectory = "/logbench-log"
	// logFileName is log_filename: fixed, so the shipper follows one file that a size
	// rotation reopens and appends to, instead of discovering new ones late.
	logFileName = "logbench.log"

	// csvlogRecordStart matches the log_time that opens every csvlog record
	// ("2026-01-02 03:04:05.678 UTC,"), by which shippers join a record's lines: a quoted
	// field may hold newlines.
	csvlogRecordStart = `\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3} `
)

// ServerSettings returns the settings, applied with ALTER SYSTEM, that make PostgreSQL
// write the destination's file for its shipper, readable by the postgres group, the
// shipper's (PostgreSQL's default, 0600, is for its user only). CloudNativePG refuses
// log_file_mode among a Cluster's parameters, not with ALTER SYSTEM; the logging
// collector creates the file, with the mode, when it switches to log_directory on the
// same reload.
func ServerSettings(d v1alpha1.Destination) map[string]string {
	return map[string]string{
		"log_destination": d.EffectiveShipper().Format.LogDestination(),
		"log_directory":   LogDirectory,
		"log_filename":    logFileName,
		"log_file_mode":   logFileMode,
	}
}

// logFileMode is log_file_mode as PostgreSQL shows it (current_setting), so that the
// agent sees the setting applied.
const logFileMode = "0640"

// Target is the shipping destination of one benchmark.
type Target struct {
	Namespace   string
	Benchmark   string
	Destination v1alpha1.Destination
	// Cluster is the destination's CloudNativePG cluster, whose name the receiver of a
	// forwarding Syslog destination takes (SyslogReceiverName).
	Cluster string
	// RsyslogImage is the image of an Rsyslog receiver whose destination names none, the
	// operator's --rsyslog-image; empty is the pinned RsyslogImage.
	RsyslogImage string
}

// logFile is the path PostgreSQL writes: it swaps log_filename's .log suffix for the
// format's own.
func (t Target) logFile() string {
	suffix := map[v1alpha1.LogFormat]string{v1alpha1.FormatCSVLog: ".csv", v1alpha1.FormatJSONLog: ".json"}
	name := strings.TrimSuffix(logFileName, ".log") + suffix[t.Destination.EffectiveShipper().Format]
	return path.Join(LogDirectory, name)
}

// shipper is the Shipper of the destination's kind.
func (t Target) shipper() Shipper {
	return shipperFor(t.Destination.EffectiveShipper().Kind)
}

// MetricsPort is the port of the shipper's own counters in the instance pod.
func (t Target) MetricsPort() int32 {
	return int32(t.shipper().MetricsPort())
}

// Image is the shipper's image: the destination's own or the pinned default of the
// kind, or, for a Syslog destination rsyslog receives, the operator's rsyslog image.
func (t Target) Image() string {
	if UsesRsyslog(t.Destination) {
		return cmp.Or(t.Destination.EffectiveShipper().Image, t.RsyslogImage, RsyslogImage)
	}
	return cmp.Or(t.Destination.EffectiveShipper().Image, t.shipper().DefaultImage())
}

// Config returns the configuration of the destination's shipper, the content of its
// ConfigMap under ConfigKey.
func Config(t Target) ([]byte, error) {
	if UsesRsyslog(t.Destination) {
		return rsyslogConfig(t), nil
	}
	return t.shipper().Config(t)
}

// extraLabels are the destination's loki.labels, sorted so that configurations are
// stable.
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

// LokiSelector is the LogQL stream selector of the destination's records.
func (t Target) LokiSelector() string {
	return t.shipper().LokiSelector(t)
}

// Environment variables of the sidecar holding Loki's credentials, from secretKeyRefs:
// the configurations name the variables, never the values.
const (
	envLokiUsername    = "LOKI_USERNAME"
	envLokiPassword    = "LOKI_PASSWORD"
	envLokiBearerToken = "LOKI_BEARER_TOKEN"
)
