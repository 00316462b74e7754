package text

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		name, message string
		maxBytes      int
		want          string
	}{
		{"short stays", "abc", 3, "abc"},
		{"long is cut", "abcdef", 3, "abc…"},
		{"never splits a character", "aé", 2, "a…"},
		{"cuts before a three-byte character", strings.Repeat("€", 3), 4, "€…"},
		{"counts what JSON escapes as its escape", "a<b>c&d", 8, "a<b…"},
		{"counts a control character as its escape", "ab\ncd\x00", 9, "ab\nc…"},
		{"counts a quote as two bytes", `a"b\c`, 4, `a"b…`},
		{"counts a byte that is not UTF-8 as its replacement", "a\xffb", 6, "a…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Truncate(tc.message, tc.maxBytes)
			if got != tc.want || utf8.ValidString(tc.message) && !utf8.ValidString(got) {
				t.Errorf("Truncate(%q, %d) = %q, want %q", tc.message, tc.maxBytes, got, tc.want)
			}
		})
	}
}

// TestTruncateBoundsTheJSON holds Truncate to its promise for the texts whose JSON is
// longest.
func TestTruncateBoundsTheJSON(t *testing.T) {
	const maxBytes = 40
	for _, character := range []string{"<", "\x01", "\n", `"`, `\`, "é", "€", "\u2028", "\xff", "\x7f"} {
		got := Truncate(strings.Repeat(character, 100), maxBytes)
		encoded, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		if size := len(encoded) - len(`""`); size > maxBytes+len(ellipsis) {
			t.Errorf("Truncate of %q × 100 is %d bytes of JSON, want at most %d", character, size, maxBytes+len(ellipsis))
		}
	}
}

type color string

func (c color) String() string { return string(c) }

func TestParseChoice(t *testing.T) {
	choices := []color{"red", "green"}
	if got, err := ParseChoice("color", "GREEN", choices); err != nil || got != "green" {
		t.Errorf("ParseChoice(GREEN) = %q, %v; want green", got, err)
	}
	_, err := ParseChoice("color", "blue", choices)
	if err == nil || err.Error() != `unknown color "blue": use one of red, green` {
		t.Errorf("ParseChoice(blue) error = %v", err)
	}
}
