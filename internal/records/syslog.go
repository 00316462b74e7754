package records

import (
	"bytes"
	"errors"
	"strconv"
)

// SyslogMessage is one message as glibc's and musl's syslog() send it to /dev/log, in
// RFC 3164's shape: "<PRI>Mmm dd hh:mm:ss ident[pid]: text".
type SyslogMessage struct {
	// Priority is PRI: facility*8 + severity.
	Priority int
	// Ident is the program name, PostgreSQL's syslog_ident.
	Ident string
	// PID is the sender's process ID, which LOG_PID adds; -1 when the message has none.
	PID int
	// Text is what follows "ident[pid]: ".
	Text []byte
}

// Errors of ParseSyslogMessage.
var (
	errNoPriority = errors.New("syslog message without <PRI>")
	errNoTag      = errors.New("syslog message without \"ident: \" or \"ident[pid]: \"")
)

// rfc3164Time is the length of "Mmm dd hh:mm:ss " (the day padded with a space).
const rfc3164Time = len("Jan  2 15:04:05 ")

// ParseSyslogMessage reads a message sent to /dev/log. The timestamp may be RFC 3164's
// or, as some libraries send, an RFC 3339 one; neither is needed to count records, so
// neither is kept.
func ParseSyslogMessage(b []byte) (SyslogMessage, error) {
	m := SyslogMessage{PID: -1}
	if len(b) < 3 || b[0] != '<' {
		return m, errNoPriority
	}
	end := bytes.IndexByte(b[:min(len(b), 5)], '>')
	if end < 2 {
		return m, errNoPriority
	}
	priority, err := strconv.Atoi(string(b[1:end]))
	if err != nil || priority < 0 || priority > 191 {
		return m, errNoPriority
	}
	m.Priority = priority
	rest := b[end+1:]
	rest = skipTimestamp(rest)
	// The tag ends at the first ": "; ident holds no space.
	colon := bytes.Index(rest, []byte(": "))
	if colon <= 0 || bytes.IndexByte(rest[:colon], ' ') >= 0 {
		return m, errNoTag
	}
	tag := rest[:colon]
	m.Text = rest[colon+2:]
	if open := bytes.LastIndexByte(tag, '['); open > 0 && tag[len(tag)-1] == ']' {
		if pid, err := strconv.Atoi(string(tag[open+1 : len(tag)-1])); err == nil && pid >= 0 {
			m.PID = pid
			tag = tag[:open]
		}
	}
	m.Ident = string(tag)
	return m, nil
}

// skipTimestamp passes over an RFC 3164 timestamp ("Jan  2 15:04:05 ") or a word
// starting with a digit (an RFC 3339 one) at the start of b.
func skipTimestamp(b []byte) []byte {
	if len(b) >= rfc3164Time && b[3] == ' ' && b[6] == ' ' && b[9] == ':' && b[12] == ':' && b[15] == ' ' {
		return b[rfc3164Time:]
	}
	if len(b) > 0 && b[0] >= '0' && b[0] <= '9' {
		if space := bytes.IndexByte(b, ' '); space > 0 {
			return b[space+1:]
		}
	}
	return b
}

// SyslogSettings are PostgreSQL's settings that shape its syslog messages.
type SyslogSettings struct {
	// SequenceNumbers is syslog_sequence_numbers.
	SequenceNumbers bool
	// SplitMessages is syslog_split_messages.
	SplitMessages bool
}

// syslogChunk is PostgreSQL's header of a message, as write_syslog (elog.c) writes it:
// "[seq-chunk] " when it numbers and splits, "[seq] " when it only numbers, "[chunk] "
// when it only splits, nothing otherwise. Split, every record is sent line by line (the
// record PostgreSQL formats always ends with a newline), lines longer than
// PG_SYSLOG_LIMIT (900 bytes) in pieces cut before a space where there is one; empty
// lines are skipped.
type syslogChunk struct {
	seq      uint64
	hasSeq   bool
	chunk    int
	hasChunk bool
	text     []byte
}

// parseChunk reads PostgreSQL's header from a message's text; ok is false when the text
// lacks the header the settings make PostgreSQL write.
func parseChunk(text []byte, s SyslogSettings) (c syslogChunk, ok bool) {
	c.text = text
	if !s.SequenceNumbers && !s.SplitMessages {
		return c, true
	}
	if len(text) < 4 || text[0] != '[' {
		return c, false
	}
	end := bytes.Index(text, []byte("] "))
	if end < 2 {
		return c, false
	}
	header := text[1:end]
	c.text = text[end+2:]
	var first, second []byte = header, nil
	if s.SequenceNumbers && s.SplitMessages {
		var found bool
		if first, second, found = bytes.Cut(header, []byte("-")); !found {
			return c, false
		}
	}
	n, err := strconv.ParseUint(string(first), 10, 64)
	if err != nil {
		return c, false
	}
	if s.SequenceNumbers {
		c.seq, c.hasSeq = n, true
	} else {
		c.chunk, c.hasChunk = int(n), true
	}
	if second != nil {
		chunk, err := strconv.Atoi(string(second))
		if err != nil || chunk < 1 {
			return c, false
		}
		c.chunk, c.hasChunk = chunk, true
	}
	return c, c.chunk >= 0
}

// SyslogCounter counts the records holding a tag in PostgreSQL's syslog messages,
// reassembling the records that PostgreSQL split: the messages of one record come
// from one process (the PID of the message) in order, but those of other processes
// may come between them. A record counts once, as soon as the tag is seen in it,
// across the messages it was split into as well. Messages that are not PostgreSQL's
// (no parsable syslog header, or no chunk header where the settings give one) are
// counted apart, as Malformed, and count as records of their own when they hold the tag.
type SyslogCounter struct {
	tag      []byte
	settings SyslogSettings
	// processes are the records being received, by PID.
	processes map[int]*syslogRecord
	count     int64
	malformed int64
}

// syslogRecord is the record a process is sending.
type syslogRecord struct {
	seq     uint64
	hasSeq  bool
	counted bool
	// tail is the end of the record received so far, where a split tag starts.
	tail []byte
}

// NewSyslogCounter returns a counter of the records holding tag in messages of a server
// running with settings s.
func NewSyslogCounter(s SyslogSettings, tag string) *SyslogCounter {
	return &SyslogCounter{tag: []byte(tag), settings: s, processes: map[int]*syslogRecord{}}
}

// Count is the number of records holding the tag received so far.
func (c *SyslogCounter) Count() int64 { return c.count }

// Malformed is the number of messages that were not PostgreSQL's syslog messages.
func (c *SyslogCounter) Malformed() int64 { return c.malformed }

// Add takes one message as sent to /dev/log.
func (c *SyslogCounter) Add(message []byte) {
	m, err := ParseSyslogMessage(message)
	if err != nil {
		c.malformed++
		c.countWhole(message)
		return
	}
	chunk, ok := parseChunk(m.Text, c.settings)
	if !ok {
		c.malformed++
		c.countWhole(m.Text)
		return
	}
	record := c.processes[m.PID]
	startsRecord := record == nil || !c.settings.SplitMessages || chunk.chunk == 1 ||
		(chunk.hasSeq && (!record.hasSeq || record.seq != chunk.seq))
	if startsRecord {
		if record == nil {
			record = &syslogRecord{}
			c.processes[m.PID] = record
		}
		record.seq, record.hasSeq, record.counted, record.tail = chunk.seq, chunk.hasSeq, false, record.tail[:0]
	}
	if record.counted {
		return
	}
	// The chunks of a record are its text cut apart, with nothing added or removed but
	// the newlines between its lines: the tag, which holds no space or newline, is found
	// across a cut by joining the end of the record so far with the new chunk.
	window := append(record.tail, chunk.text...)
	if bytes.Contains(window, c.tag) {
		record.counted = true
		c.count++
		record.tail = record.tail[:0]
		return
	}
	keep := min(len(window), max(len(c.tag)-1, 0))
	record.tail = append(record.tail[:0], window[len(window)-keep:]...)
}

func (c *SyslogCounter) countWhole(text []byte) {
	if bytes.Contains(text, c.tag) {
		c.count++
	}
}

// SyslogLine escapes a message as one line of a file, as rsyslog does: control
// characters (a split-off record's newlines among them) become '#' and three octal
// digits; the line ends with a newline.
func SyslogLine(dst, message []byte) []byte {
	for _, b := range message {
		if b < ' ' || b == 0x7f {
			dst = append(dst, '#', '0'+b>>6, '0'+(b>>3)&7, '0'+b&7)
			continue
		}
		dst = append(dst, b)
	}
	return append(dst, '\n')
}

// syslogLines counts the records of a file of messages written with SyslogLine. The
// tag holds no '#' or control character, so it is found in the escaped text as in
// the message.
type syslogLines struct {
	counter *SyslogCounter
	line    []byte
}

// NewSyslogLineCounter returns a Counter of the records holding tag in a file of
// messages written with SyslogLine by a server running with settings s.
func NewSyslogLineCounter(s SyslogSettings, tag string) Counter {
	return &syslogLines{counter: NewSyslogCounter(s, tag)}
}

func (c *syslogLines) Write(p []byte) (int, error) {
	written := len(p)
	for len(p) > 0 {
		end := bytes.IndexByte(p, '\n')
		if end < 0 {
			c.line = append(c.line, p...)
			break
		}
		line := p[:end]
		if len(c.line) > 0 {
			c.line = append(c.line, line...)
			line = c.line
		}
		c.counter.Add(line)
		c.line = c.line[:0]
		p = p[end+1:]
	}
	return written, nil
}

func (c *syslogLines) Count() int64 { return c.counter.Count() }
