package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/controllers"
	"github.com/logbench/logbench/internal/localpg/localpgtest"
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
	valid := filepath.Join(dir, "valid.yaml")
	if err := os.WriteFile(valid, []byte(`apiVersion: bench.logbench.io/v1alpha1
kind: LoggingBenchmark
metadata: {name: valid}
spec:
  destinations: [{name: csvlog, type: CSVLog}]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		args    []string
		message string
	}{
		"not local":             {[]string{"run", "-f", invalid}, "needs --local"},
		"no file":               {[]string{"run", "--local"}, `required flag(s) "file" not set`},
		"missing file":          {[]string{"run", "--local", "-f", filepath.Join(dir, "absent.yaml")}, "no such file"},
		"invalid spec":          {[]string{"run", "--local", "-f", invalid}, "spec.destinations"},
		"unknown format":        {[]string{"run", "--local", "-f", invalid, "-o", "xml"}, "xml"},
		"no server in --pg-bin": {[]string{"run", "--local", "-f", valid, "--pg-bin", dir}, "--pg-bin: neither " + dir},
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

// TestRunOnTheNamedInstallation measures a csvlog destination on PostgreSQL 18, named
// with --pg-bin, with its sessions' connections and disconnections logged: every
// expected record must arrive.
func TestRunOnTheNamedInstallation(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	pg18 := localpgtest.PostgreSQL18(t)
	spec := filepath.Join(t.TempDir(), "pg18.yaml")
	if err := os.WriteFile(spec, []byte(`apiVersion: bench.logbench.io/v1alpha1
kind: LoggingBenchmark
metadata: {name: pg18}
spec:
  baseline: {enabled: false}
  logging: {connections: true, disconnections: true}
  destinations: [{name: csvlog, type: CSVLog}]
  workload: {scale: 1, clients: [2], duration: 2s, repeats: 1}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	root := newRootCommand()
	var out, progress bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&progress)
	// The system's temporary directory (--work-dir's default): under root the server
	// runs as the postgres user, who cannot enter the test's private directory.
	root.SetArgs([]string{"run", "--local", "-f", spec, "--pg-bin", filepath.Dir(pg18.BinDir), "-o", "json"})
	if err := root.Execute(); err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	var rows []v1alpha1.Result
	if err := json.Unmarshal(out.Bytes(), &rows); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(rows) != 1 {
		t.Fatalf("%d result rows, want 1:\n%s", len(rows), out.String())
	}
	records := rows[0].Records
	// Two records of each of pgbench's three sessions beside one a transaction.
	if records.Dropped == nil || *records.Dropped != 0 || records.Delivered != records.Expected || records.Expected <= 6 {
		t.Errorf("records %+v, want every expected record delivered\n%s", records, out.String())
	}
}

// TestLocalStatusReportsAccountingErrors: a local run saved an accounting error without
// any condition.
func TestLocalStatusReportsAccountingErrors(t *testing.T) {
	benchmark := &v1alpha1.LoggingBenchmark{Spec: v1alpha1.LoggingBenchmarkSpec{
		Destinations: []v1alpha1.Destination{{Name: "csv", Type: v1alpha1.DestinationCSVLog}},
		Workload:     v1alpha1.WorkloadSpec{Clients: []int32{1}, Repeats: 1},
	}}
	rows := []v1alpha1.Result{{Destination: "csv", Clients: 1, Repeats: []v1alpha1.RepeatResult{{Repeat: 1}},
		Records: v1alpha1.Records{Expected: 10, Delivered: 12, AccountingError: "repeat 1: 12 records arrived"}}}
	now := metav1.Now()
	setLocalStatus(benchmark, rows, now, now, 1)
	degraded := meta.FindStatusCondition(benchmark.Status.Conditions, controllers.ConditionDegraded)
	if degraded == nil || degraded.Status != metav1.ConditionTrue ||
		degraded.Reason != controllers.ReasonAccountingError || !strings.Contains(degraded.Message, "csv/1") {
		t.Errorf("Degraded = %+v, want True for the accounting error of csv/1", degraded)
	}
	ready := meta.IsStatusConditionTrue(benchmark.Status.Conditions, controllers.ConditionReady)
	if benchmark.Status.Phase != v1alpha1.PhaseSucceeded || !ready {
		t.Errorf("phase %s, conditions %+v: want Succeeded and Ready, the runs did run",
			benchmark.Status.Phase, benchmark.Status.Conditions)
	}
}
