package text

import (
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Truncate(tc.message, tc.maxBytes)
			if got != tc.want || !utf8.ValidString(got) {
				t.Errorf("Truncate(%q, %d) = %q, want %q", tc.message, tc.maxBytes, got, tc.want)
			}
		})
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
