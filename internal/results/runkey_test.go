package results

import "testing"

func TestParseRunKeyReadsWhatStringWrites(t *testing.T) {
	run := RunKey{Destination: "csv", Clients: 2, Repeat: 1}
	for name, want := range map[string]*RunKey{
		run.String(): &run,
		"csv/2":      nil,
		"csv/2/1/0":  nil,
		"csv/x/1":    nil,
		"csv/2/y":    nil,
		"":           nil,
	} {
		got, err := ParseRunKey(name)
		if (err == nil) != (want != nil) || (want != nil && got != *want) {
			t.Errorf("ParseRunKey(%q) = %v, %v; want %v", name, got, err, want)
		}
	}
}
