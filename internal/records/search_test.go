package records

import (
	"bytes"
	"strings"
	"testing"
)

// assertSearches checks finder and lastIndexByte against the bytes package, with
// every guard byte and with the guard chosen from the text.
func assertSearches(t *testing.T, text, pattern []byte) {
	t.Helper()
	want := bytes.Index(text, pattern)
	chosen := newFinder(pattern)
	if got := chosen.index(text); got != want {
		t.Fatalf("finding %q in %q by its rarest byte: %d, want %d", pattern, text, got, want)
	}
	for guard := range pattern {
		if got := finderBy(string(pattern), guard).index(text); got != want {
			t.Fatalf("finding %q in %q by byte %d: %d, want %d", pattern, text, guard, got, want)
		}
	}
	if len(pattern) > 0 {
		if got, want := lastIndexByte(text, pattern[0]), bytes.LastIndexByte(text, pattern[0]); got != want {
			t.Fatalf("last %q in %q: %d, want %d", pattern[0], text, got, want)
		}
	}
}

func TestSearches(t *testing.T) {
	long := strings.Repeat("select lbtag from local\n", 300)
	tests := []struct{ text, pattern string }{
		{"", ""},
		{"", "lbtag"},
		{"lbtag", "lbtag"},
		{"lbta", "lbtag"},
		{"xlbtagx", "lbtag"},
		{"lblbtag", "lbtag"},
		{"l", "l"},
		{long, "lbtag"},
		{long + "lbtag-bench", "lbtag-bench"},
		{long, "\n"},
		{"\n" + strings.Repeat("x", 5000), "\n"},
		{`{"level":"info","logger":"postgres","msg":"record"}`, `"msg":"`},
	}
	for _, tt := range tests {
		assertSearches(t, []byte(tt.text), []byte(tt.pattern))
	}
}

func FuzzSearches(f *testing.F) {
	f.Add([]byte("select lbtag from local\nlbtag"), []byte("lbtag"))
	f.Fuzz(func(t *testing.T, text, pattern []byte) {
		assertSearches(t, text, pattern)
	})
}
