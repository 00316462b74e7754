package records

import (
	"bytes"
	"strings"
	"testing"
)

func TestParseSyslogMessage(t *testing.T) {
	for _, tt := range []struct {
		message  string
		want     SyslogMessage
		parseErr bool
	}{
		// glibc 2.36's format, as a real server sent it (see the ground-truth test).
		{"<134>Nov 26 12:14:02 postgres[4242]: [7-1] LOG:  statement: SELECT 1",
			SyslogMessage{Priority: 134, Ident: "postgres", PID: 4242, Text: []byte("[7-1] LOG:  statement: SELECT 1")}, false},
		{"<13>Jan  2 03:04:05 pg: text: with colons",
			SyslogMessage{Priority: 13, Ident: "pg", PID: -1, Text: []byte("text: with colons")}, false},
		{"<134>2026-11-26T12:14:02.123456+00:00 postgres[1]: [1] x",
			SyslogMessage{Priority: 134, Ident: "postgres", PID: 1, Text: []byte("[1] x")}, false},
		{"<134>Nov 26 12:14:02 postgres[4242]: ", SyslogMessage{Priority: 134, Ident: "postgres", PID: 4242, Text: []byte{}}, false},
		{"no priority", SyslogMessage{}, true},
		{"<192>Nov 26 12:14:02 postgres: x", SyslogMessage{}, true},
		{"<134>Nov 26 12:14:02 no tag here", SyslogMessage{}, true},
	} {
		got, err := ParseSyslogMessage([]byte(tt.message))
		if (err != nil) != tt.parseErr {
			t.Errorf("%q: error %v, want an error %t", tt.message, err, tt.parseErr)
			continue
		}
		if err == nil && (got.Priority != tt.want.Priority || got.Ident != tt.want.Ident || got.PID != tt.want.PID ||
			!bytes.Equal(got.Text, tt.want.Text)) {
			t.Errorf("%q: %+v, want %+v", tt.message, got, tt.want)
		}
	}
}

// TestSyslogCounterReassemblesInterleavedRecords: the chunks of two processes'
// records come mixed, the tag of one is cut across its chunks, and a record whose tag
// is on every line counts once.
func TestSyslogCounterReassemblesInterleavedRecords(t *testing.T) {
	const tag = "lb_d_c1_r1_abc"
	msg := func(pid, header, text string) []byte {
		return []byte("<134>Nov 26 12:14:02 postgres[" + pid + "]: " + header + text)
	}
	split := SyslogSettings{SequenceNumbers: true, SplitMessages: true}
	messages := [][]byte{
		msg("1", "[5-1] ", "LOG:  statement: SELECT 1 /* xxxx"),
		msg("2", "[9-1] ", "LOG:  duration: 1 ms "+tag),
		msg("1", "[5-2] ", "xxxlb_d_c1"),
		msg("2", "[9-2] ", "STATEMENT:  "+tag),
		msg("1", "[5-3] ", "_r1_abc */"),
		msg("1", "[6-1] ", "LOG:  statement: SELECT 2 /* lb_d_c1_r1_abd */"),
		msg("3", "[1-2] ", "a continuation whose start was lost "+tag),
		[]byte("garbage " + tag),
	}
	c := NewSyslogCounter(split, tag)
	for _, m := range messages {
		c.Add(m)
	}
	if c.Count() != 4 || c.Malformed() != 1 {
		t.Errorf("counted %d records and %d malformed messages, want 4 and 1", c.Count(), c.Malformed())
	}
	// Without splitting every message is a record; without sequence numbers, chunk 1
	// starts one.
	whole := NewSyslogCounter(SyslogSettings{}, tag)
	chunks := NewSyslogCounter(SyslogSettings{SplitMessages: true}, tag)
	for _, m := range [][]byte{msg("1", "", tag+"\n\tsecond line "+tag+"\n"), msg("1", "", "other")} {
		whole.Add(m)
	}
	for _, m := range [][]byte{msg("1", "[1] ", tag), msg("1", "[2] ", tag), msg("1", "[1] ", "x"), msg("1", "[2] ", tag)} {
		chunks.Add(m)
	}
	if whole.Count() != 1 || chunks.Count() != 2 || whole.Malformed()+chunks.Malformed() != 0 {
		t.Errorf("unsplit %d, split without sequence numbers %d; want 1 and 2", whole.Count(), chunks.Count())
	}
}

func TestSyslogLineEscapesControlCharacters(t *testing.T) {
	got := string(SyslogLine(nil, []byte("a\n\tb\x7f")))
	if want := "a#012#011b#177\n"; got != want {
		t.Errorf("SyslogLine = %q, want %q", got, want)
	}
	lines := NewSyslogLineCounter(SyslogSettings{}, "tag")
	text := string(SyslogLine(nil, []byte("<134>Nov 26 12:14:02 postgres[1]: x\ntag"))) +
		string(SyslogLine(nil, []byte("<134>Nov 26 12:14:02 postgres[1]: tag")))
	for _, part := range strings.SplitAfter(text, "t") {
		if _, err := lines.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	if lines.Count() != 2 {
		t.Errorf("the line counter found %d records, want 2", lines.Count())
	}
}

// FuzzSyslogCounter feeds arbitrary messages: parsing never panics, a parsed message's
// text is a suffix of it, and the counter never counts more records than messages.
func FuzzSyslogCounter(f *testing.F) {
	f.Add([]byte("<134>Nov 26 12:14:02 postgres[4242]: [7-1] LOG:  statement: SELECT 1 tag"), true, true)
	f.Add([]byte("<13>2026-11-26T12:14:02Z pg: [3] tag"), false, true)
	f.Add([]byte("<1>"), true, false)
	f.Add([]byte("[1-] tag"), true, true)
	f.Fuzz(func(t *testing.T, message []byte, sequence, split bool) {
		if m, err := ParseSyslogMessage(message); err == nil && !bytes.HasSuffix(message, m.Text) {
			t.Fatalf("text %q is not the end of %q", m.Text, message)
		}
		c := NewSyslogCounter(SyslogSettings{SequenceNumbers: sequence, SplitMessages: split}, "tag")
		c.Add(message)
		c.Add(message)
		if c.Count() > 2 || c.Malformed() > 2 {
			t.Fatalf("two messages made %d records and %d malformed", c.Count(), c.Malformed())
		}
	})
}
