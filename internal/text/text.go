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

// Truncate bounds message to at most maxBytes bytes of its own, plus an ellipsis when it
// was cut; it never splits a UTF-8 character, so the result stays valid JSON and YAML.
func Truncate(message string, maxBytes int) string {
	if len(message) <= maxBytes {
		return message
	}
	cut := maxBytes
	for cut > 0 && !utf8.RuneStart(message[cut]) {
		cut--
	}
	return message[:cut] + ellipsis
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
