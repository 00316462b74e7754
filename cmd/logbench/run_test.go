package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunRefusesBeforeMeasuring checks that bad invocations and bad benchmarks stop with
// a clear error before any server starts.
func TestRunRefusesBeforeMeasuring(t *testing.T) {
	dir := t.TempDir()
	invalid := filepath.Join(dir, "invalid.yaml")
	if err := os.WriteFile(invalid, []byte(`apiVersion: bench.logbench.io/v1alpha1
kind: LoggingBenchmark
metadata: {name: invalid}
spec:
  postgres:
    parameters: {log_destination: syslog}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		args    []string
		message string
	}{
		"not local":      {[]string{"run", "-f", invalid}, "needs --local"},
		"no file":        {[]string{"run", "--local"}, `required flag(s) "file" not set`},
		"missing file":   {[]string{"run", "--local", "-f", filepath.Join(dir, "absent.yaml")}, "no such file"},
		"invalid spec":   {[]string{"run", "--local", "-f", invalid}, "spec.destinations"},
		"unknown format": {[]string{"run", "--local", "-f", invalid, "-o", "xml"}, "xml"},
	} {
		t.Run(name, func(t *testing.T) {
			root := newRootCommand()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs(tc.args)
			err := root.Execute()
			if err == nil || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("error = %v, want it to mention %q", err, tc.message)
			}
			if strings.Contains(out.String(), "DESTINATION") {
				t.Errorf("a results table was printed for a refused run:\n%s", out.String())
			}
		})
	}
}
