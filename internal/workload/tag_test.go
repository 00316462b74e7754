package workload

import (
	"regexp"
	"strings"
	"testing"
)

func TestNewTag(t *testing.T) {
	tests := []struct {
		destination     string
		clients, repeat int32
		nonce           string
		want            string
	}{
		{"csv", 4, 2, "0a1b2c", "lb_csv_c4_r2_0a1b2c"},
		{"json-log", 1000, 20, "ffffff", "lb_json-log_c1000_r20_ffffff"},
		{"Under_Score", 1, 1, "AB_cd", "lb_under-score_c1_r1_ab-cd"},
		{"a-destination-name-longer-than-twenty", 1, 1, "n", "lb_a-destination-name-l_c1_r1_n"},
		{"ünïcode", 1, 1, "0123456789abcdef", "lb_-n-code_c1_r1_0123456789ab"},
	}
	for _, tt := range tests {
		if got := NewTag(tt.destination, tt.clients, tt.repeat, tt.nonce); got != tt.want {
			t.Errorf("NewTag(%q, %d, %d, %q) = %q, want %q", tt.destination, tt.clients, tt.repeat, tt.nonce, got, tt.want)
		}
	}
}

func TestNewTagIsAValidApplicationName(t *testing.T) {
	const maxInt32 = 1<<31 - 1
	tag := NewTag(strings.Repeat("d", 40), maxInt32, -maxInt32, strings.Repeat("n", 40))
	if len(tag) > 63 {
		t.Errorf("tag %q is %d bytes, application_name keeps 63", tag, len(tag))
	}
	if err := validTag(tag); err != nil {
		t.Error(err)
	}
}

// Counters find a run's records by its tag, so no tag of a benchmark may occur inside
// another (c1 inside c16, r1 inside r10, destination "a" inside "a-b").
func TestNewTagIsNeverInsideAnotherTag(t *testing.T) {
	destinations := []string{"a", "a-b", "b-a", "ab", "lb", "c1"}
	clientCounts := []int32{1, 10, 16, 100}
	repeats := []int32{1, 2, 10, 11}
	nonces := []string{"000000", "000001", "100000"}
	tags := make([]string, 0, len(destinations)*len(clientCounts)*len(repeats)*len(nonces))
	for _, destination := range destinations {
		for _, clients := range clientCounts {
			for _, repeat := range repeats {
				for _, nonce := range nonces {
					tags = append(tags, NewTag(destination, clients, repeat, nonce))
				}
			}
		}
	}
	seen := map[string]bool{}
	for _, tag := range tags {
		if seen[tag] {
			t.Fatalf("tag %q generated twice", tag)
		}
		seen[tag] = true
	}
	for _, inner := range tags {
		for _, outer := range tags {
			if inner != outer && strings.Contains(outer, inner) {
				t.Errorf("tag %q occurs inside %q", inner, outer)
			}
		}
	}
}

func TestTagPatternMatchesEveryRunOfItsDestinationOnly(t *testing.T) {
	pattern := regexp.MustCompile(TagPattern("fluent-bit"))
	for tag, want := range map[string]bool{
		NewTag("fluent-bit", 1, 1, "abcdefabcdef"):   true,
		NewTag("fluent-bit", 16, 20, "0123456789ab"): true,
		NewTag("fluent", 1, 1, "abcdefabcdef"):       false,
		NewTag("fluent-bit2", 1, 1, "abcdefabcdef"):  false,
		// A warm-up's records are not a run's: the shipper filters them out.
		NewWarmupTag("fluent-bit", 1, "abcdefabcdef"): false,
		NewTag("fluent-bit", 1, 10, "abcdefabcdef"):   true,
	} {
		if got := pattern.MatchString(tag); got != want {
			t.Errorf("%s matches %s: %v, want %v", TagPattern("fluent-bit"), tag, got, want)
		}
	}
}
