package workload

import (
	"fmt"
	"regexp"
	"strings"
)

// Limits that keep every tag within PostgreSQL's 63-byte application_name
// (NAMEDATALEN - 1): "lb_" + 20 + "_c" + 10 + "_r" + 10 + "_" + 12 = 60 bytes.
const (
	maxDestinationLength = 20 // the API's limit on destination names
	maxNonceLength       = 12
)

// NewTag names one attempt of one run: lb_<destination>_c<clients>_r<repeat>_<nonce>.
// It becomes the sessions' application_name and a comment in every statement.
//
// Fields are separated by '_' and never contain one, so a tag is never a substring of
// another tag with a nonce of the same length: "lb_d_c1_r1_…" cannot occur inside
// "lb_d_c16_r1_…". Callers must therefore use nonces of one fixed length.
func NewTag(destination string, clients, repeat int32, nonce string) string {
	return fmt.Sprintf("lb_%s_c%d_r%d_%s",
		tagField(destination, maxDestinationLength), clients, repeat, tagField(nonce, maxNonceLength))
}

// NewWarmupTag names the warm-up before a destination's first run at a client count: the
// tag of a repeat 0, which no run has and TagPattern leaves out.
func NewWarmupTag(destination string, clients int32, nonce string) string {
	return NewTag(destination, clients, 0, nonce)
}

// TagPattern is a regular expression (RE2 and Onigmo alike) matching the tag of any run
// of the destination, whatever its clients, repeat and nonce, and not a warm-up's.
func TagPattern(destination string) string {
	return "lb_" + regexp.QuoteMeta(tagField(destination, maxDestinationLength)) + "_c[0-9]+_r[1-9][0-9]*_"
}

// tagField keeps s within max bytes of lower-case letters, digits and '-', replacing
// anything else (the field separator '_' included) with '-'.
func tagField(s string, max int) string {
	s = strings.ToLower(s)
	if len(s) > max {
		s = s[:max]
	}
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, s)
}
