// Package records accounts for PostgreSQL log records: how many a run must produce and
// how many reached a destination.
package records

import (
	"fmt"

	"github.com/logbench/logbench/internal/text"
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

// formatNames are the formats' names, indexed by Format.
var formatNames = []string{
	FormatStderr:       "stderr",
	FormatCSVLog:       "csvlog",
	FormatJSONLog:      "jsonlog",
	FormatContainerLog: "containerlog",
}

func (f Format) String() string {
	if f >= 0 && int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// ParseFormat returns the format named as by Format.String, case-insensitively.
func ParseFormat(name string) (Format, error) {
	formats := make([]Format, 0, len(formatNames))
	for f := range Format(len(formatNames)) {
		formats = append(formats, f)
	}
	return text.ParseChoice("log format", name, formats)
}
