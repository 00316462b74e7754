// Package destination holds the one table of what each destination type means to
// logbench: where a run's records are counted, and from that the server settings that
// route them there and the format their counter reads, in a CloudNativePG instance pod
// (the agent) and on this machine (the local runner). The format PostgreSQL writes and
// whether a sidecar ships the records are the API's own facts (v1alpha1.Destination's
// EffectiveFormat and Ships, read from its typeRecords). A new destination type needs its
// constant, Enum marker value and DestinationTypes entry in the API, its entry in the API's
// typeRecords and its entry in behaviours here; tests fail while one is missing.
package destination

import (
	"fmt"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/records"
	"github.com/logbench/logbench/internal/shipping"
)

// Counting is where a run's records are counted.
type Counting int

const (
	// ContainerLog is the postgres container's log, which CloudNativePG's own pipeline
	// feeds; on this machine, the server's standard error, which logbench appends to a
	// file as a container runtime does.
	ContainerLog Counting = iota
	// ServerFiles are the files the logging collector writes.
	ServerFiles
	// Shipper is the pipeline of a shipper sidecar, from the file it reads to what it
	// sent and, for Loki, what Loki holds. This machine has no pod for the sidecar.
	Shipper
	// SyslogReceiver is where the server's syslog() messages arrive: in a pod, the
	// receiver sidecar on /dev/log and what it forwarded or sent, counted as a shipper's;
	// on this machine, logbench's own receiver, whose file is counted.
	SyslogReceiver
)

// Behaviour is what logbench does with the records of one destination type.
type Behaviour struct {
	// Counted is where a run's records are counted.
	Counted Counting
	// keepsPodRouting leaves the routing of CloudNativePG's pod alone: the baseline logs
	// no statements, so there is nothing to route.
	keepsPodRouting bool
}

// behaviours is the table of destination types.
var behaviours = map[v1alpha1.DestinationType]Behaviour{
	v1alpha1.DestinationNone:             {Counted: ContainerLog, keepsPodRouting: true},
	v1alpha1.DestinationStdout:           {Counted: ContainerLog},
	v1alpha1.DestinationStderr:           {Counted: ServerFiles},
	v1alpha1.DestinationCSVLog:           {Counted: ServerFiles},
	v1alpha1.DestinationJSONLog:          {Counted: ServerFiles},
	v1alpha1.DestinationFluentBitSidecar: {Counted: Shipper},
	v1alpha1.DestinationLoki:             {Counted: Shipper},
	v1alpha1.DestinationSyslog:           {Counted: SyslogReceiver},
}

// Route is a destination with the behaviour of its type.
type Route struct {
	Destination v1alpha1.Destination
	Behaviour
}

// For returns the route of the destination; an error says its type is not in the table,
// as when an older agent meets a newer operator's type.
func For(d v1alpha1.Destination) (Route, error) {
	behaviour, ok := behaviours[d.Type]
	if !ok {
		return Route{}, fmt.Errorf("destination type %s is not supported by this version of logbench", d.Type)
	}
	return Route{Destination: d, Behaviour: behaviour}, nil
}

// logDestinationSetting is the server setting that names the formats PostgreSQL writes.
const logDestinationSetting = "log_destination"

// Log file names, log_filename: PostgreSQL swaps the .log suffix for .csv or .json in
// those formats.
const (
	podLogName   = "logbench-%Y%m%d-%H%M%S.log"
	localLogName = "postgresql-%Y%m%d-%H%M%S.log"
)

// PodSettings returns the settings that route the records in a CloudNativePG instance
// pod, where the Cluster spec cannot carry them (CloudNativePG rejects log_destination
// and friends there): the agent sets them with ALTER SYSTEM. logDirectory is where the
// logging collector writes server files.
func (r Route) PodSettings(logDirectory string) map[string]string {
	switch r.Counted {
	case ContainerLog:
		if r.keepsPodRouting {
			return nil
		}
		// CloudNativePG's pipeline carries any format; csvlog is its default.
		return map[string]string{logDestinationSetting: r.logDestination()}
	case ServerFiles:
		return map[string]string{
			logDestinationSetting: r.logDestination(),
			"log_directory":       logDirectory,
			"log_filename":        podLogName,
		}
	case SyslogReceiver:
		return r.syslogSettings()
	}
	return shipping.ServerSettings(r.Destination)
}

// RunsLocally reports whether a server on this machine can play the destination.
func (r Route) RunsLocally() bool {
	return r.Counted != Shipper
}

// LocalSettings returns the settings that route the records of a server on this machine,
// for a route that RunsLocally.
func (r Route) LocalSettings() map[string]string {
	switch r.Counted {
	case ContainerLog:
		// Without the logging collector the server writes stderr-format records to its
		// standard error.
		return map[string]string{"logging_collector": "off", logDestinationSetting: "stderr"}
	case SyslogReceiver:
		settings := r.syslogSettings()
		settings["logging_collector"] = "off"
		return settings
	}
	return map[string]string{
		"logging_collector":   "on",
		logDestinationSetting: r.logDestination(),
		"log_filename":        localLogName,
	}
}

// PodFormat is the format in which the agent counts the records: the container log
// wraps whatever PostgreSQL format feeds it.
func (r Route) PodFormat() records.Format {
	if r.Counted == ContainerLog {
		return records.FormatContainerLog
	}
	return r.writtenFormat()
}

// LocalFormat is the format in which the local runner counts the records.
func (r Route) LocalFormat() records.Format {
	if r.Counted == ContainerLog {
		return records.FormatStderr
	}
	return r.writtenFormat()
}

// syslogSettings route the records to syslog() as the destination configures it.
func (r Route) syslogSettings() map[string]string {
	settings := r.Destination.EffectiveSyslog().Settings()
	settings[logDestinationSetting] = r.logDestination()
	return settings
}

// SyslogSettings are the server's settings that shape its syslog messages, for a
// Syslog destination's counters.
func (r Route) SyslogSettings() records.SyslogSettings {
	s := r.Destination.EffectiveSyslog()
	return records.SyslogSettings{SequenceNumbers: *s.SequenceNumbers, SplitMessages: *s.SplitMessages}
}

func (r Route) logDestination() string {
	return r.Destination.EffectiveFormat().LogDestination()
}

// writtenFormat is the format of the files PostgreSQL writes.
func (r Route) writtenFormat() records.Format {
	return counterFormats[r.Destination.EffectiveFormat()]
}

// counterFormats are the counters' names of PostgreSQL's formats.
var counterFormats = map[v1alpha1.LogFormat]records.Format{
	v1alpha1.FormatStderr:  records.FormatStderr,
	v1alpha1.FormatCSVLog:  records.FormatCSVLog,
	v1alpha1.FormatJSONLog: records.FormatJSONLog,
}
