// Package text holds the small string rules every part of logbench applies alike:
// bounding a message kept in a status or a termination message, and reading a name
// chosen from a fixed list (an output format, a log format).
package text

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// ellipsis marks a truncated message.
const ellipsis = "…"

// Truncate bounds message so that encoding/json writes it in at most maxBytes bytes,
// quotes aside, plus an ellipsis when it was cut: what it keeps goes into a status or a
// termination message, both stored as JSON, whose encoded size is what the API server,
// etcd and the kubelet bound. A character encoding/json escapes counts as its escape
// (a control character, <, >, &, U+2028 and U+2029 as six bytes, a quote or a backslash
// as two). It never splits a UTF-8 character, so the result stays valid JSON and YAML.
func Truncate(message string, maxBytes int) string {
	size := 0
	for i := 0; i < len(message); {
		r, width := utf8.DecodeRuneInString(message[i:])
		size += encodedSize(r, width)
		if size > maxBytes {
			return message[:i] + ellipsis
		}
		i += width
	}
	return message
}

// encodedSize is how many bytes encoding/json writes for the character r, width bytes
// of a string; escapes are counted at their longest.
func encodedSize(r rune, width int) int {
	switch {
	case r == utf8.RuneError && width == 1, r < 0x20, r == '<', r == '>', r == '&', r == '\u2028', r == '\u2029':
		return len(`\u0000`)
	case r == '"', r == '\\':
		return len(`\"`)
	}
	return width
}

// ParseChoice returns the choice whose name (its String) equals name, case-insensitively;
// what names the kind of choice in the error, which lists the valid names.
func ParseChoice[T fmt.Stringer](what, name string, choices []T) (T, error) {
	names := make([]string, len(choices))
	for i, choice := range choices {
		if strings.EqualFold(choice.String(), name) {
			return choice, nil
		}
		names[i] = choice.String()
	}
	var none T
	return none, fmt.Errorf("unknown %s %q: use one of %s", what, name, strings.Join(names, ", "))
}
