package records

import (
	"bytes"
	"io"
)

// Counter counts, in a log written to it in chunks of any size, the records that
// contain a tag.
type Counter interface {
	io.Writer
	// Count is the number of records written so far that contain the tag, each counted
	// once however often the tag occurs in it. A record counts as soon as the tag is
	// seen in it, so a last record without its final newline counts too.
	Count() int64
}

// NewCounter returns a streaming counter of the records of format f containing tag.
// It keeps constant memory: the start of the current line and the last len(tag)-1
// bytes, so that a tag split between two writes is still found.
//
// The tag is matched on the bytes as written, so it must read the same in every
// format: one line, without quotes, backslashes or control characters (which csvlog and
// JSON escape); letters, digits, '-', '_' and '.' are safe. An empty tag matches every
// record.
func NewCounter(f Format, tag string) Counter {
	return &lineCounter{
		tag:        []byte(tag),
		search:     newFinder([]byte(tag)),
		classifier: classifierFor(f),
		head:       make([]byte, 0, maxHead),
		tail:       make([]byte, 0, 2*len(tag)),
		window:     make([]byte, 0, 2*len(tag)),
	}
}

// lineCounter reads the log one physical line at a time: a classifier tells from the
// start of each line whether it begins a record, continues the current one, is a
// record of its own or is to be ignored.
type lineCounter struct {
	tag        []byte
	search     finder
	classifier lineClassifier
	count      int64
	// recordCounted says the current multi-line record has been counted.
	recordCounted bool

	// State of the current line, which may span several writes.
	midLine     bool
	kind        lineKind
	lineCounted bool
	tagSeen     bool   // also set ahead by skipLinesWithoutTag
	head        []byte // start of the line while its kind is unknown
	tail        []byte // last len(tag)-1 bytes of the line
	window      []byte // scratch for tags split between writes
}

func (c *lineCounter) Count() int64 { return c.count }

func (c *lineCounter) Write(p []byte) (int, error) {
	written := len(p)
	for len(p) > 0 {
		if !c.midLine && !c.recordCounted {
			p = c.skipLinesWithoutTag(p)
		}
		end := bytes.IndexByte(p, '\n')
		if end < 0 {
			c.readLine(p, false)
			break
		}
		c.readLine(p[:end], true)
		p = p[end+1:]
	}
	return written, nil
}

// skipLinesWithoutTag passes over the lines of p before the first one holding the tag,
// letting the classifier see their bytes. Outside a counted record such lines change
// nothing, whatever their kind: a record they start or continue is not counted, and the
// next line holding the tag is classified as usual. This is the fast path: one search
// over many lines instead of one a line.
func (c *lineCounter) skipLinesWithoutTag(p []byte) []byte {
	match := c.search.index(p)
	if match < 0 {
		match = len(p)
	}
	lineStart := lastIndexByte(p[:match], '\n') + 1
	c.classifier.consume(p[:lineStart])
	c.tagSeen = match < len(p)
	return p[lineStart:]
}

// readLine takes the next part of the current line; ended says the line ends with it.
func (c *lineCounter) readLine(part []byte, ended bool) {
	if c.kind == kindUnknown {
		c.classify(part, ended)
	}
	c.classifier.consume(part)
	if c.wantsTag() {
		c.tagSeen = c.tagSeen || c.containsTag(part)
		if c.tagSeen && c.kind != kindUnknown {
			c.countLine()
		}
	}
	c.midLine = !ended
	if ended {
		c.kind, c.lineCounted, c.tagSeen = kindUnknown, false, false
		c.head, c.tail = c.head[:0], c.tail[:0]
	} else if c.wantsTag() {
		c.rememberTail(part)
	}
}

// classify decides the kind of the current line from its first maxHead bytes,
// keeping them across writes until it can.
func (c *lineCounter) classify(part []byte, ended bool) {
	head := part
	if len(c.head) > 0 {
		c.head = append(c.head, part[:min(len(part), maxHead-len(c.head))]...)
		head = c.head
	}
	head = head[:min(len(head), maxHead)]
	c.kind = c.classifier.classify(head, ended || len(head) == maxHead)
	switch {
	case c.kind == startsRecord:
		c.recordCounted = false
	case c.kind == kindUnknown && len(c.head) == 0:
		c.head = append(c.head, head...)
	}
}

func (c *lineCounter) wantsTag() bool {
	if c.lineCounted {
		return false
	}
	switch c.kind {
	case startsRecord, continuesRecord:
		return !c.recordCounted
	case ignoredLine:
		return false
	}
	return true
}

func (c *lineCounter) countLine() {
	c.lineCounted = true
	switch c.kind {
	case startsRecord, continuesRecord:
		c.recordCounted = true
		c.count++
	case isRecord:
		c.count++
	}
}

// containsTag finds the tag in part, or across the end of the line seen before.
func (c *lineCounter) containsTag(part []byte) bool {
	if len(c.tail) > 0 {
		c.window = append(append(c.window[:0], c.tail...), part[:min(len(part), len(c.tag)-1)]...)
		if bytes.Contains(c.window, c.tag) {
			return true
		}
	}
	return c.search.index(part) >= 0
}

// rememberTail keeps the last len(tag)-1 bytes of the line, all a split tag needs.
func (c *lineCounter) rememberTail(part []byte) {
	keep := len(c.tag) - 1
	if keep <= 0 {
		return
	}
	if len(part) >= keep {
		c.tail = append(c.tail[:0], part[len(part)-keep:]...)
		return
	}
	c.tail = append(c.tail, part...)
	if len(c.tail) > keep {
		c.tail = c.tail[:copy(c.tail, c.tail[len(c.tail)-keep:])]
	}
}
