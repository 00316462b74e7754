package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/logbench/logbench/internal/version"
)

// TestVersion checks that the version subcommand and the --version flag both print the
// version, commit and date the linker stamps.
func TestVersion(t *testing.T) {
	stamped := []*string{&version.Version, &version.Commit, &version.Date}
	saved := []string{version.Version, version.Commit, version.Date}
	t.Cleanup(func() {
		for i, variable := range stamped {
			*variable = saved[i]
		}
	})
	version.Version, version.Commit, version.Date = "1.2.3", "0123abcd", "2026-11-26T12:00:00Z"
	want := []string{"version: 1.2.3\n", "commit: 0123abcd\n", "built: 2026-11-26T12:00:00Z\n"}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		root := newRootCommand()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetArgs(args)
		if err := root.Execute(); err != nil {
			t.Fatalf("logbench %s: %v", args[0], err)
		}
		for _, line := range want {
			if !strings.Contains(out.String(), line) {
				t.Errorf("logbench %s printed\n%s\nwithout %q", args[0], out.String(), line)
			}
		}
	}
}
