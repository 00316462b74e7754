package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const savedBenchmark = `apiVersion: bench.logbench.io/v1alpha1
kind: LoggingBenchmark
metadata: {name: saved}
spec:
  destinations: [{name: csvlog, type: CSVLog}]
  baseline: {enabled: true}
  workload: {clients: [1], repeats: 1}
status:
  phase: Succeeded
  results:
  - {destination: baseline, type: None, clients: 1, tps: 100, records: {expected: 0, delivered: 0},
    repeats: [{repeat: 1, tps: 100, records: {expected: 0, delivered: 0}}]}
  - {destination: csvlog, type: CSVLog, clients: 1, tps: 80, overheadPercent: 20,
    records: {expected: 800, delivered: 800, dropped: 0},
    repeats: [{repeat: 1, tps: 80, records: {expected: 800, delivered: 800}}]}
`

func TestReport(t *testing.T) {
	dir := t.TempDir()
	saved := filepath.Join(dir, "saved.yaml")
	if err := os.WriteFile(saved, []byte(savedBenchmark), 0o644); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "report.html")
	for name, tc := range map[string]struct {
		args    []string
		message string // of the error; empty for success
		stdout  string
	}{
		"table":                         {args: []string{"report", "-f", saved}, stdout: "20.0%"},
		"markdown":                      {args: []string{"report", "-f", saved, "-o", "markdown"}, stdout: "# LoggingBenchmark saved"},
		"html to a file":                {args: []string{"report", "-f", saved, "-o", "html", "--output-file", page}},
		"file and its benchmark's name": {args: []string{"report", "saved", "-f", saved}, stdout: "20.0%"},
		"file and another name":         {args: []string{"report", "x", "-f", saved}, message: "not x"},
		// The baseline ran 100 TPS, csvlog 80: against csvlog the baseline gains 25%.
		"against another destination": {args: []string{"report", "-f", saved, "--against", "csvlog"},
			stdout: "Overhead against: csvlog"},
		"against a destination without results": {args: []string{"report", "-f", saved, "--against", "stdout"},
			message: `no results of a destination named "stdout" to measure overheads against; the results hold baseline, csvlog`},
		"nothing":      {args: []string{"report"}, message: "give the NAME"},
		"missing file": {args: []string{"report", "-f", filepath.Join(dir, "absent.yaml")}, message: "no such file"},
		"no cluster": {
			args:    []string{"report", "x", "--kubeconfig", filepath.Join(dir, "absent")},
			message: "give -f FILE",
		},
		"unknown format": {
			args:    []string{"report", "-f", saved, "-o", "pdf"},
			message: `unknown report format "pdf"`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			root := newRootCommand()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&bytes.Buffer{})
			root.SetArgs(tc.args)
			err := root.Execute()
			if tc.message == "" && err != nil {
				t.Fatal(err)
			}
			if tc.message != "" && (err == nil || !strings.Contains(err.Error(), tc.message)) {
				t.Fatalf("error = %v, want it to mention %q", err, tc.message)
			}
			if !strings.Contains(out.String(), tc.stdout) {
				t.Errorf("output does not contain %q:\n%s", tc.stdout, out.String())
			}
		})
	}
	written, err := os.ReadFile(page)
	if err != nil || !bytes.Contains(written, []byte("<svg")) {
		t.Errorf("--output-file wrote no HTML report: %v", err)
	}
}

func TestDisplayName(t *testing.T) {
	for executable, want := range map[string]string{
		"/usr/local/bin/kubectl-logbench": "kubectl logbench",
		"kubectl-logbench.exe":            "kubectl logbench",
		"./bin/logbench":                  "logbench",
	} {
		if got := displayName(executable); got != want {
			t.Errorf("displayName(%q) = %q, want %q", executable, got, want)
		}
	}
}
