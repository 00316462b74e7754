package version

import (
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	checkout := map[string]string{"vcs.revision": "abc123", "vcs.time": "2026-11-26T10:00:00Z"}
	tests := []struct {
		name                  string
		version, commit, date string
		settings              map[string]string
		want                  Info
	}{
		{
			name:    "release build: the linker's values win",
			version: "0.1.0", commit: "def456", date: "2026-11-26T12:00:00Z",
			settings: checkout,
			want:     Info{Version: "0.1.0", Commit: "def456", Date: "2026-11-26T12:00:00Z"},
		},
		{
			name:     "go build in a checkout",
			settings: checkout,
			want:     Info{Version: "0.0.0-dev", Commit: "abc123", Date: "2026-11-26T10:00:00Z"},
		},
		{
			name:     "go build in a modified checkout",
			settings: map[string]string{"vcs.revision": "abc123", "vcs.modified": "true"},
			want:     Info{Version: "0.0.0-dev", Commit: "abc123-dirty", Date: "unknown"},
		},
		{
			name: "nothing recorded",
			want: Info{Version: "0.0.0-dev", Commit: "unknown", Date: "unknown"},
		},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			got := resolve(test.version, test.commit, test.date, test.settings)
			if got.Version != test.want.Version || got.Commit != test.want.Commit || got.Date != test.want.Date {
				t.Errorf("resolve = %+v, want version %s, commit %s, date %s",
					got, test.want.Version, test.want.Commit, test.want.Date)
			}
			if got.GoVersion == "" || !strings.Contains(got.Platform, "/") {
				t.Errorf("resolve = %+v, want the Go version and the platform", got)
			}
		})
	}
}
