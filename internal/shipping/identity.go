package shipping

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/logbench/logbench/api/v1alpha1"
)

// RecordIdentity names one record of a server: its session and its line number in that
// session, which PostgreSQL's csvlog and jsonlog both carry. A record stored twice holds
// the same identity twice.
type RecordIdentity struct {
	Session string
	Line    int64
}

// IdentityParser reads the identity of the record a Loki entry holds.
type IdentityParser func(line string) (RecordIdentity, error)

// IdentityOf returns the parser of the identity of the destination's stored records, and
// false when they carry none logbench can read: stderr has no session line number, and
// a syslog message wraps the record in the transport's own format.
func IdentityOf(d v1alpha1.Destination) (IdentityParser, bool) {
	if d.Type == v1alpha1.DestinationSyslog {
		return nil, false
	}
	switch d.EffectiveFormat() {
	case v1alpha1.FormatCSVLog:
		return func(line string) (RecordIdentity, error) { return CSVLogIdentity(storedRecord(line)) }, true
	case v1alpha1.FormatJSONLog:
		return func(line string) (RecordIdentity, error) { return JSONLogIdentity(storedRecord(line)) }, true
	}
	return nil, false
}

// storedRecord is the record a Loki line holds: Fluent Bit's Loki output (line_format
// json) stores the tail input's record as {"log": "<record>"}; the collector stores the
// OTLP body, the record itself. A jsonlog record has no "log" field.
func storedRecord(line string) string {
	if !strings.HasPrefix(line, "{") {
		return line
	}
	var wrapped struct {
		Log *string `json:"log"`
	}
	if json.Unmarshal([]byte(line), &wrapped) != nil || wrapped.Log == nil {
		return line
	}
	return *wrapped.Log
}

// csvlog's columns: log_time, user_name, database_name, process_id, connection_from,
// session_id, session_line_num, ...
const (
	csvlogSessionID   = 5
	csvlogSessionLine = 6
)

// CSVLogIdentity reads session_id and session_line_num of one whole csvlog record, whose
// quoted fields may hold commas, doubled quotes and newlines.
func CSVLogIdentity(record string) (RecordIdentity, error) {
	reader := csv.NewReader(strings.NewReader(record))
	reader.FieldsPerRecord = -1
	fields, err := reader.Read()
	if err != nil {
		return RecordIdentity{}, fmt.Errorf("not a csvlog record: %w", err)
	}
	if _, err := reader.Read(); !errors.Is(err, io.EOF) {
		return RecordIdentity{}, errors.New("not one csvlog record: more follows the first")
	}
	if len(fields) <= csvlogSessionLine {
		return RecordIdentity{}, fmt.Errorf("a csvlog record has %d fields, too few for session_line_num", len(fields))
	}
	return identity(fields[csvlogSessionID], fields[csvlogSessionLine])
}

// JSONLogIdentity reads session_id and line_num of one jsonlog record.
func JSONLogIdentity(record string) (RecordIdentity, error) {
	var fields struct {
		SessionID *string      `json:"session_id"`
		LineNum   *json.Number `json:"line_num"`
	}
	if err := json.Unmarshal([]byte(record), &fields); err != nil {
		return RecordIdentity{}, fmt.Errorf("not a jsonlog record: %w", err)
	}
	if fields.SessionID == nil || fields.LineNum == nil {
		return RecordIdentity{}, errors.New("a jsonlog record without session_id or line_num")
	}
	return identity(*fields.SessionID, fields.LineNum.String())
}

func identity(session, line string) (RecordIdentity, error) {
	n, err := strconv.ParseInt(line, 10, 64)
	if session == "" || err != nil || n < 1 {
		return RecordIdentity{}, fmt.Errorf("session %.40q line %.40q is not a record's identity", session, line)
	}
	return RecordIdentity{Session: session, Line: n}, nil
}
