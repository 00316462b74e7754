// Package serverlog reads why a PostgreSQL server stopped from the end of its
// container's log, as CloudNativePG's instance manager writes it. The controller's pod
// diagnosis is its one user; it stays a package of its own so that fuzzing this parser
// instruments a small test binary, without client-go or controller-runtime.
package serverlog

import (
	"encoding/json"
	"slices"
	"strings"
)

// serverSeverities are the labels of the messages with which PostgreSQL stops.
var serverSeverities = []string{"FATAL:", "PANIC:"}

// configurationErrors is the end of the FATAL message of a server whose configuration
// file holds a value it refuses; the lines before it name the parameters.
const configurationErrors = "contains errors"

// Stopped reads why a PostgreSQL container stopped from the end of its log, as
// CloudNativePG's instance manager writes it: JSON lines whose msg holds pg_ctl's and the
// server's own output, csvlog records in record. refused says the server stopped with a
// FATAL or PANIC, returned with the parameter errors it follows; otherwise message is
// the instance manager's last error, if any.
func Stopped(log string) (message string, refused bool) {
	lines := logLines(log)
	for i, line := range slices.Backward(lines) {
		fatal := fromSeverity(line.text, serverSeverities...)
		if fatal == "" {
			continue
		}
		if !strings.HasSuffix(fatal, configurationErrors) {
			return fatal, true
		}
		var causes []string
		for j := i - 1; j >= 0 && j >= i-20; j-- {
			if cause := fromSeverity(lines[j].text, "LOG:", "ERROR:"); strings.Contains(cause, `parameter "`) {
				causes = append([]string{cause}, causes...)
			}
		}
		return strings.Join(append(causes, fatal), "; "), true
	}
	for _, line := range slices.Backward(lines) {
		if line.level == "error" {
			return line.text, false
		}
	}
	// Other lines are left out: a status must not quote what a container may print.
	return "", false
}

// logLine is a line of an instance manager's log: its level (JSON lines only) and text.
type logLine struct {
	level, text string
}

func logLines(log string) []logLine {
	var lines []logLine
	for raw := range strings.SplitSeq(log, "\n") {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		var entry struct {
			Level  string `json:"level"`
			Msg    string `json:"msg"`
			Error  string `json:"error"`
			Record *struct {
				Severity string `json:"error_severity"`
				Message  string `json:"message"`
			} `json:"record"`
		}
		if err := json.Unmarshal([]byte(raw), &entry); err != nil || entry.Msg == "" {
			lines = append(lines, logLine{text: raw})
			continue
		}
		line := logLine{level: entry.Level, text: entry.Msg}
		switch {
		case entry.Record != nil && entry.Record.Severity != "":
			line.text = entry.Record.Severity + ": " + entry.Record.Message
		case entry.Error != "":
			line.text += ": " + entry.Error
		}
		lines = append(lines, line)
	}
	return lines
}

// fromSeverity returns text from the first of the severity labels it holds on, with its
// runs of spaces made one, or "" when it holds none.
func fromSeverity(text string, severities ...string) string {
	for _, severity := range severities {
		if at := strings.Index(text, severity); at >= 0 {
			return strings.Join(strings.Fields(text[at:]), " ")
		}
	}
	return ""
}
