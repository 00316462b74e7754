// Package records accounts for PostgreSQL log records: how many a run must produce and
// how many reached a destination.
package records

import (
	"fmt"

	"github.com/logbench/logbench/api/v1alpha1"
)

// Format is the shape of the log a counter reads.
type Format int

const (
	// FormatStderr is PostgreSQL's plain stderr format: a record is a first line that
	// starts with log_line_prefix, then lines starting with a tab (multi-line text) and
	// prefixed DETAIL, HINT, QUERY, CONTEXT, LOCATION and STATEMENT lines.
	FormatStderr Format = iota
	// FormatCSVLog is PostgreSQL's csvlog: one CSV row a record, quoted fields may hold
	// newlines.
	FormatCSVLog
	// FormatJSONLog is PostgreSQL's jsonlog: one JSON object a line.
	FormatJSONLog
	// FormatContainerLog is the postgres container's stdout under CloudNativePG: JSON
	// lines of the instance manager carrying csvlog records ("msg":"record"), stderr
	// lines wrapped one physical line at a time, and jsonlog lines passed through.
	FormatContainerLog
)

var formatNames = map[Format]string{
	FormatStderr:       "stderr",
	FormatCSVLog:       "csvlog",
	FormatJSONLog:      "jsonlog",
	FormatContainerLog: "containerlog",
}

func (f Format) String() string {
	if name, ok := formatNames[f]; ok {
		return name
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// ParseFormat returns the format named as by Format.String.
func ParseFormat(name string) (Format, error) {
	for f, n := range formatNames {
		if n == name {
			return f, nil
		}
	}
	return 0, fmt.Errorf("unknown log format %q: use stderr, csvlog, jsonlog or containerlog", name)
}

// FormatFor is the format in which a destination's records are counted: file
// destinations in PostgreSQL's own format, Stdout in the container log whatever
// PostgreSQL format feeds it.
func FormatFor(d v1alpha1.Destination) Format {
	switch d.Type {
	case v1alpha1.DestinationStderr:
		return FormatStderr
	case v1alpha1.DestinationJSONLog:
		return FormatJSONLog
	case v1alpha1.DestinationStdout:
		return FormatContainerLog
	case v1alpha1.DestinationFluentBitSidecar, v1alpha1.DestinationLoki:
		if d.EffectiveShipper().Format == v1alpha1.FormatJSONLog {
			return FormatJSONLog
		}
	}
	return FormatCSVLog
}
