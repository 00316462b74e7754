package records

import (
	"bytes"
	"slices"
)

// maxHead bounds how much of a line its classification may look at: more than
// log_line_prefix's longest expansion (timestamp, pid, and user, database and
// application names of at most 63 bytes each), JSON-escaped, after the instance
// manager's own fields.
const maxHead = 1024

// lineKind is the part a physical line plays in the records of a log.
type lineKind uint8

const (
	// kindUnknown: not enough of the line has been seen to tell.
	kindUnknown lineKind = iota
	// startsRecord: the line begins a record that may continue on the next lines.
	startsRecord
	// continuesRecord: the line belongs to the record begun before it.
	continuesRecord
	// isRecord: the line is a record of its own, apart from any multi-line record.
	isRecord
	// ignoredLine: the line is no PostgreSQL record.
	ignoredLine
)

// lineClassifier tells the kind of each line of one format.
type lineClassifier interface {
	// classify returns the kind of a line from its first bytes. complete says no more
	// bytes of the line will be offered; only then is kindUnknown not an answer.
	classify(head []byte, complete bool) lineKind
	// consume sees every byte of the log, in order, newlines or not.
	consume(part []byte)
}

func classifierFor(f Format) lineClassifier {
	switch f {
	case FormatStderr:
		return stderrLines{}
	case FormatCSVLog:
		return &csvLines{}
	case FormatContainerLog:
		return containerLines{}
	}
	return jsonLines{}
}

// jsonLines is jsonlog: every line is a record.
type jsonLines struct{}

func (jsonLines) classify([]byte, bool) lineKind { return startsRecord }
func (jsonLines) consume([]byte)                 {}

// csvLines is csvlog: a line continues a record when it starts inside a quoted field.
// PostgreSQL quotes every field that may hold a quote or newline and doubles the
// quotes inside, so the parity of the quotes seen so far is the quoting state.
type csvLines struct{ inQuotes bool }

func (c *csvLines) classify([]byte, bool) lineKind {
	if c.inQuotes {
		return continuesRecord
	}
	return startsRecord
}

func (c *csvLines) consume(part []byte) {
	if bytes.Count(part, []byte{'"'})%2 == 1 {
		c.inQuotes = !c.inQuotes
	}
}

// stderrLines is PostgreSQL's stderr format.
type stderrLines struct{}

func (stderrLines) classify(head []byte, complete bool) lineKind {
	return stderrKind(head, tab, complete)
}

func (stderrLines) consume([]byte) {}

// The keys of the instance manager's lines are found by their name's first byte: a
// quote opens every JSON string.
var (
	zapLoggerKey  = finderBy(`"logger":"`, 1)
	zapMessageKey = finderBy(`"msg":"`, 1)
)

var (
	tab            = []byte("\t")
	jsonEscapedTab = []byte(`\t`)
	labelSeparator = []byte(":  ")
	zapLinePrefix  = []byte(`{"level":`)
	postgresLogger = []byte(`postgres"`)
	// CloudNativePG writes pgaudit's csvlog records under a logger of their own.
	pgauditLogger   = []byte(`pgaudit"`)
	csvRecordMarker = []byte(`record"`)
	// recordLoggers name the loggers whose lines are PostgreSQL's records.
	recordLoggers = [][]byte{postgresLogger, pgauditLogger}
)

// stderrKind classifies a line of the stderr format. PostgreSQL writes a record as
// one line "<log_line_prefix><SEVERITY>:  <message>", every further line of a
// multi-line text starting with a tab, and the record's DETAIL, HINT, QUERY, CONTEXT,
// LOCATION and STATEMENT as lines of their own behind the same prefix. The prefix is
// configurable, so the label is found as the word before the first ":  ", which no
// prefix escape produces. lc_messages must be English (CloudNativePG's default C):
// the labels are translated otherwise.
func stderrKind(line, tab []byte, complete bool) lineKind {
	if bytes.HasPrefix(line, tab) {
		return continuesRecord
	}
	before, _, ok := bytes.Cut(line, labelSeparator)
	if !ok {
		if complete {
			return startsRecord
		}
		return kindUnknown
	}
	label := before
	start := len(label)
	for start > 0 && label[start-1] >= 'A' && label[start-1] <= 'Z' {
		start--
	}
	switch string(label[start:]) {
	case "DETAIL", "HINT", "QUERY", "CONTEXT", "LOCATION", "STATEMENT":
		return continuesRecord
	}
	return startsRecord
}

// containerLines is the postgres container's stdout under CloudNativePG. The
// instance manager writes zap JSON lines: csvlog records as
// {"level":..,"ts":..,"logger":"postgres","msg":"record",..,"record":{..}}, lines of the
// stderr format one physical line at a time as {..,"logger":"postgres","msg":"<line>",
// "source":"/controller/log/postgres"}, pgaudit's csvlog records as the others under the
// logger "pgaudit", and its own messages under other loggers.
// jsonlog lines are copied through unchanged.
type containerLines struct{}

func (containerLines) classify(head []byte, complete bool) lineKind {
	if !bytes.HasPrefix(head, zapLinePrefix) {
		if !complete && bytes.HasPrefix(zapLinePrefix, head) {
			return kindUnknown
		}
		return isRecord
	}
	logger, found := valueAfter(head, zapLoggerKey)
	if !found || mayBecomeRecordLogger(logger) {
		return unknownUnless(complete, ignoredLine)
	}
	if !slices.ContainsFunc(recordLoggers, func(name []byte) bool { return bytes.HasPrefix(logger, name) }) {
		return ignoredLine
	}
	message, found := valueAfter(head, zapMessageKey)
	if !found || (len(message) < len(csvRecordMarker) && bytes.HasPrefix(csvRecordMarker, message)) {
		return unknownUnless(complete, startsRecord)
	}
	if bytes.HasPrefix(message, csvRecordMarker) {
		return isRecord
	}
	return stderrKind(message, jsonEscapedTab, complete)
}

func (containerLines) consume([]byte) {}

// mayBecomeRecordLogger: the logger's name read so far may still be one whose lines are
// PostgreSQL's records.
func mayBecomeRecordLogger(logger []byte) bool {
	return slices.ContainsFunc(recordLoggers, func(name []byte) bool {
		return len(logger) < len(name) && bytes.HasPrefix(name, logger)
	})
}

// valueAfter returns what follows key in head.
func valueAfter(head []byte, key *finder) ([]byte, bool) {
	i := key.index(head)
	if i < 0 {
		return nil, false
	}
	return head[i+len(key.pattern):], true
}

// unknownUnless is kindUnknown while more of the line may come, otherwise kind.
func unknownUnless(complete bool, kind lineKind) lineKind {
	if complete {
		return kind
	}
	return kindUnknown
}
