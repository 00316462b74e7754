package localrun

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/bench"
	"github.com/logbench/logbench/internal/localpg"
	"github.com/logbench/logbench/internal/localpg/localpgtest"
	"github.com/logbench/logbench/internal/manifest"
	"github.com/logbench/logbench/internal/results"
	"github.com/logbench/logbench/internal/testenv"
)

// TestScriptsCountedAtTheSource runs config/samples/scripts-local.yaml, its ConfigMap
// read from the same file, with one short run per destination after a warm-up, on the
// local PostgreSQL with logbench_counter built for it (TestSamplingCountedAtTheSource
// runs the counter on both majors): the sample's reads, writes and slow report, with
// log_min_duration_statement 5 and auto_explain, to stderr, csvlog and jsonlog files.
// Every row's expected records are counted at the source, every file holds exactly that
// many, and the slow report logs some in every row but the baseline's.
func TestScriptsCountedAtTheSource(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a PostgreSQL extension and starts PostgreSQL servers")
	}
	documents, err := manifest.Read(filepath.Join(testenv.Root(t), "config", "samples", "scripts-local.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	spec := &documents.Benchmark.Spec
	spec.Workload.Warmup.Duration = time.Second
	rows := runShortCounted(t, spec, Options{Installation: localpgtest.Local(t), ConfigMaps: documents.ConfigMaps})
	for _, row := range rows {
		if len(results.Successful(row.Repeats)) != 1 {
			continue // runShortCounted said so
		}
		name, expected := results.RowName(row), row.Records.Expected
		if logs := row.Type != v1alpha1.DestinationNone; logs != (expected > 0) {
			t.Errorf("%s: %d records expected; every row but the baseline's logs the slow report", name, expected)
		}
		repeat := row.Repeats[0]
		if repeat.Transactions == 0 {
			t.Errorf("%s: no transaction", name)
		}
		// pgbench reports each script's share, which logbench names by its key. With more
		// than one thread pgbench adds them up without a lock, and misses a few.
		keys := make([]v1alpha1.ConfigMapKey, 0, len(repeat.Scripts))
		var transactions int64
		for _, script := range repeat.Scripts {
			keys = append(keys, script.Key)
			transactions += script.Transactions
			if script.TPS <= 0 || script.LatencyAvgMs <= 0 {
				t.Errorf("%s: script %s has TPS %v and latency %v ms", name, script.Key, script.TPS, script.LatencyAvgMs)
			}
		}
		want := make([]v1alpha1.ConfigMapKey, 0, len(spec.Workload.Scripts.Files))
		for _, file := range spec.Workload.Scripts.Files {
			want = append(want, file.Key)
		}
		if !slices.Equal(keys, want) || transactions > repeat.Transactions || transactions < repeat.Transactions*99/100 {
			t.Errorf("%s: scripts %v with %d transactions, want %v with nearly all of the run's %d",
				name, keys, transactions, want, repeat.Transactions)
		}
	}
}

// TestScriptsNeedTheirConfigMapAndTheCounter: a local run refuses, before it starts any
// server, scripts whose ConfigMap is not in the file or lacks a key, naming them, and
// scripts without the counter, naming it.
func TestScriptsNeedTheirConfigMapAndTheCounter(t *testing.T) {
	spec := &v1alpha1.LoggingBenchmarkSpec{
		Destinations: []v1alpha1.Destination{{Name: "csv", Type: v1alpha1.DestinationCSVLog}},
		Workload: v1alpha1.WorkloadSpec{Scripts: &v1alpha1.WorkloadScripts{
			ConfigMap: v1alpha1.ConfigMapReference{Name: "queries"},
			Files:     []v1alpha1.ScriptFile{{Key: "read.sql", Weight: 1}}, Init: "schema.sql",
		}},
	}
	queries := func(data map[string]string) corev1.ConfigMap {
		return corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "queries"}, Data: data}
	}
	tests := []struct {
		name       string
		configMaps []corev1.ConfigMap
		counter    string
		want       []string
	}{
		{"no counter", nil, "", []string{"spec.workload.scripts", "logbench_counter"}},
		{"no ConfigMap", []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "other"}}}, "/counter",
			[]string{"ConfigMap queries", "another YAML document"}},
		{"no init key", []corev1.ConfigMap{queries(map[string]string{"read.sql": "SELECT 1;"})}, "/counter",
			[]string{"ConfigMap queries", "no key schema.sql"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			outcome, err := Execute(context.Background(), spec, Options{CounterLibrary: tt.counter, ConfigMaps: tt.configMaps})
			for _, want := range tt.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("Execute: %v, want an error naming %q", err, want)
				}
			}
			if len(outcome.Runs) != 0 {
				t.Errorf("%d runs measured", len(outcome.Runs))
			}
		})
	}
}

// TestScriptsInitRunsOnce: the init runs once per database however often it is asked
// to, and again when it changed; one that fails keeps nothing, not even the record that
// it ran, so that the next attempt runs it from nothing.
func TestScriptsInitRunsOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a PostgreSQL server")
	}
	ctx := context.Background()
	server, err := localpg.Start(ctx, localpg.Config{Installation: localpgtest.Local(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Stop(context.Background()) })
	conn, err := pgx.Connect(ctx, server.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	const (
		init    = "CREATE TABLE IF NOT EXISTS runs (n int); INSERT INTO runs VALUES (1);"
		changed = init + " INSERT INTO runs VALUES (2);"
		failing = "CREATE TABLE kept (n int); SELECT 1/0;"
	)
	for _, sql := range []string{init, init, changed, changed} {
		if err := bench.InitScripts(ctx, conn, sql); err != nil {
			t.Fatal(err)
		}
	}
	var rows, inits int
	if err := conn.QueryRow(ctx, "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM logbench_init)").
		Scan(&rows, &inits); err != nil {
		t.Fatal(err)
	}
	if rows != 3 || inits != 2 {
		t.Errorf("%d rows from %d inits recorded, want 3 from 2: each init once", rows, inits)
	}
	err = bench.InitScripts(ctx, conn, failing)
	if err == nil || !strings.Contains(err.Error(), "division by zero") {
		t.Errorf("a failing init: %v, want its error", err)
	}
	var kept bool
	if err := conn.QueryRow(ctx, "SELECT to_regclass('kept') IS NOT NULL").Scan(&kept); err != nil || kept {
		t.Errorf("the failing init's table kept: %t (%v)", kept, err)
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM logbench_init").Scan(&inits); err != nil || inits != 2 {
		t.Errorf("%d inits recorded after a failing one (%v), want 2", inits, err)
	}
}
