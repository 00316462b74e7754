package localrun

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/localpg"
	"github.com/logbench/logbench/internal/localpg/localpgtest"
	"github.com/logbench/logbench/internal/manifest"
	"github.com/logbench/logbench/internal/report"
	"github.com/logbench/logbench/internal/results"
	"github.com/logbench/logbench/internal/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	localpgtest.RemoveCounterBuilds()
	os.Exit(code)
}

// TestSamplingCountedAtTheSource runs config/samples/sampling-local.yaml, with one short
// run per destination, on PostgreSQL 15 and 18 with logbench_counter built for each:
// log_statement_sample_rate 0.1 (with log_min_duration_sample 0) and
// log_min_duration_statement 0 with auto_explain, to stderr, csvlog and jsonlog files,
// and log_statement=all to stderr. Every row's expected records are counted at the
// source, and every file holds exactly that many: none dropped, no accounting error.
// log_statement=all is one the model predicts too, and the count agrees with it (a
// difference would be an accounting error); with the sessions' connections and
// disconnections logged, the count includes the records backends log as they exit.
func TestSamplingCountedAtTheSource(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a PostgreSQL extension and starts PostgreSQL servers")
	}
	localpgtest.Run(t, func(t *testing.T, inst localpg.Installation) {
		rows := runSampleCountedAtTheSource(t, inst, "sampling-local.yaml")
		for _, row := range rows {
			if logs := row.Type != v1alpha1.DestinationNone; logs != (row.Records.Expected > 0) {
				t.Errorf("%s: %d records expected; only the baseline logs none", results.RowName(row),
					row.Records.Expected)
			}
		}
		// A tenth of the statements, sampled, against every statement's duration and plan:
		// the sample must be the smaller, or the settings did not apply.
		if sampled, explained := findRow(t, rows, "csvlog-sampled"), findRow(t, rows, "csvlog-explain"); sampled.Records.Expected >= explained.Records.Expected {
			t.Errorf("csvlog-sampled logged %d records, csvlog-explain %d: the sample is not smaller",
				sampled.Records.Expected, explained.Records.Expected)
		}
	})
}

// TestSamplingSavingsCountedAtTheSource runs config/samples/sampling-savings-local.yaml,
// docs/sampling.md's benchmark, with one short run per destination, on the local
// PostgreSQL (TestSamplingCountedAtTheSource runs the counter on both majors): every
// statement, a tenth and a hundredth of them at random, and the statements slower than
// 1 ms and 5 ms, to csvlog files, each row counted at the source and delivered. Each
// sample and threshold logs fewer records a transaction than the one before it, or the
// settings did not apply: a transaction, since the rows' runs, side by side on a shared
// machine, commit different numbers of them. A threshold may log none on a machine fast
// enough that no statement crosses it.
func TestSamplingSavingsCountedAtTheSource(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a PostgreSQL extension and starts PostgreSQL servers")
	}
	rows := runSampleCountedAtTheSource(t, localpgtest.Local(t), "sampling-savings-local.yaml")
	perTransaction := func(destination string) float64 {
		row := findRow(t, rows, destination)
		if len(row.Repeats) == 0 || row.Repeats[0].Transactions == 0 {
			t.Fatalf("%s ran no transaction: %+v", destination, row.Repeats)
		}
		return float64(row.Records.Expected) / float64(row.Repeats[0].Transactions)
	}
	for _, fewer := range []struct {
		more, less string
		strictly   bool
	}{
		{more: "csvlog-all", less: "csvlog-sample-10pct", strictly: true},
		{more: "csvlog-sample-10pct", less: "csvlog-sample-1pct", strictly: true},
		{more: "csvlog-all", less: "csvlog-slower-1ms", strictly: true},
		{more: "csvlog-slower-1ms", less: "csvlog-slower-5ms"},
	} {
		more, less := perTransaction(fewer.more), perTransaction(fewer.less)
		if less > more || (fewer.strictly && less == more) {
			t.Errorf("%s logged %.3f records a transaction, %s %.3f: want fewer in %[3]s", fewer.more, more,
				fewer.less, less)
		}
	}
	if perTransaction("csvlog-sample-1pct") == 0 {
		t.Error("csvlog-sample-1pct logged no record: the run sampled nothing to compare")
	}
}

// runSampleCountedAtTheSource runs the local sample of config/samples named file with
// runShortCounted, without a warm-up, and checks that the results say every row is
// counted at the source.
func runSampleCountedAtTheSource(t *testing.T, inst localpg.Installation, file string) []v1alpha1.Result {
	t.Helper()
	root := testenv.Root(t)
	benchmark, err := manifest.ReadFile(filepath.Join(root, "config", "samples", file))
	if err != nil {
		t.Fatal(err)
	}
	spec := &benchmark.Spec
	spec.Workload.Warmup.Duration = 0
	rows := runShortCounted(t, spec, Options{Installation: inst})
	if note := report.ExpectedSourceNote(rows); !strings.Contains(note, "counted at the source") ||
		!strings.Contains(note, "in every row") {
		t.Errorf("the results say %q, want every row counted at the source", note)
	}
	return rows
}

// runShortCounted runs spec with one 2-s run per destination and logbench_counter built
// for options.Installation, and checks that there is a row per destination, each of
// which ran, with its expected records counted at the source, exactly, and every one of
// them delivered: none dropped or late, no accounting error.
func runShortCounted(t *testing.T, spec *v1alpha1.LoggingBenchmarkSpec, options Options) []v1alpha1.Result {
	t.Helper()
	spec.Workload.Duration.Duration = 2 * time.Second
	spec.Workload.Repeats = 1
	options.Seed = 1
	options.CounterLibrary = localpgtest.CounterLibrary(t, options.Installation)
	outcome, err := Execute(context.Background(), spec, options)
	if err != nil {
		t.Fatal(err)
	}
	rows := results.Aggregate(spec, outcome.Runs)
	if len(rows) != len(spec.EffectiveDestinations()) {
		t.Fatalf("%d rows, want one per destination: %+v", len(rows), rows)
	}
	for _, row := range rows {
		name, r := results.RowName(row), row.Records
		if len(results.Successful(row.Repeats)) != 1 {
			t.Errorf("%s failed: %+v", name, row.Repeats)
			continue
		}
		if r.ExpectedSource != v1alpha1.ExpectedCounted || r.ExpectedIsEstimate {
			t.Errorf("%s: expected %d, %s (estimate %t); want counted at the source, exact", name, r.Expected,
				r.ExpectedSource, r.ExpectedIsEstimate)
		}
		if r.Dropped == nil || *r.Dropped != 0 || r.Delivered != r.Expected || r.ArrivedLate != 0 ||
			r.AccountingError != "" {
			t.Errorf("%s: records %+v, want every record counted at the source delivered", name, r)
		}
		t.Logf("%s (%s): %d records counted at the source, %d in the files, after %d transactions", name,
			row.Logging, r.Expected, r.Delivered, row.Repeats[0].Transactions)
	}
	return rows
}

// TestSettingsNeedingTheCounterAreRefusedWithoutIt: without a counter library, a local
// run refuses the settings only a count at the source accounts for, naming the extension
// and how to build it, before it starts any server.
func TestSettingsNeedingTheCounterAreRefusedWithoutIt(t *testing.T) {
	root := testenv.Root(t)
	benchmark, err := manifest.ReadFile(filepath.Join(root, "config", "samples", "sampling-local.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// No installation: the refusal comes first.
	outcome, err := Execute(context.Background(), &benchmark.Spec, Options{})
	if !errors.Is(err, ErrNoCounter) || len(outcome.Runs) != 0 {
		t.Fatalf("Execute without a counter: %v after %d runs, want ErrNoCounter before any", err, len(outcome.Runs))
	}
	for _, want := range []string{
		"spec.destinations[1].logging.minDurationSample", "spec.destinations[1].logging.statementSampleRate",
		"spec.destinations[4].logging.autoExplain", "logbench_counter", "make logbench-counter", "PGXS",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal %q does not name %s", err, want)
		}
	}
}

// TestFindCounter: the library given is used by its absolute path, with or without its
// suffix; without one, the installation's own, in its library directory, by
// $libdir; without either, none.
func TestFindCounter(t *testing.T) {
	root := t.TempDir()
	inst := localpg.Installation{BinDir: filepath.Join(root, "bin"), Version: 15}
	if got, err := FindCounter(inst, ""); got != "" || err != nil {
		t.Errorf("FindCounter without a library = %q, %v; want none", got, err)
	}
	built := filepath.Join(root, "build", "logbench_counter.so")
	for _, file := range []string{built, filepath.Join(root, "lib", "logbench_counter.so")} {
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := FindCounter(inst, ""); got != "$libdir/logbench_counter" || err != nil {
		t.Errorf("FindCounter of an installed library = %q, %v; want $libdir/logbench_counter", got, err)
	}
	t.Chdir(filepath.Join(root, "build"))
	for _, given := range []string{"logbench_counter.so", "logbench_counter"} {
		if got, err := FindCounter(inst, given); err != nil || (got != built && got != strings.TrimSuffix(built, ".so")) {
			t.Errorf("FindCounter(%q) = %q, %v; want the absolute path of %s", given, got, err, built)
		}
	}
	if _, err := FindCounter(inst, filepath.Join(root, "a,b", "logbench_counter.so")); err == nil ||
		!strings.Contains(err.Error(), "shared_preload_libraries") {
		t.Errorf("FindCounter of a path with a comma: %v, want it refused", err)
	}
	if _, err := FindCounter(inst, filepath.Join(root, "missing.so")); err == nil || !strings.Contains(err.Error(), "missing.so") {
		t.Errorf("FindCounter of a missing library: %v, want an error naming it", err)
	}
}

// moreCountedSettings are the other settings only a count at the source accounts for,
// and the server's standard output as a destination: a tenth of the transactions
// sampled, lock waits beside every statement (four clients updating scale 1's one branch
// row, deadlock_timeout 1 ms), auto_explain's measured plans in JSON, and a sample of the
// statements on stderr piped into logbench.
const moreCountedSettings = `apiVersion: bench.logbench.io/v1alpha1
kind: LoggingBenchmark
metadata: {name: counted}
spec:
  baseline: {enabled: false}
  postgres: {parameters: {deadlock_timeout: 1ms}}
  logging: {statement: none}
  destinations:
  - {name: csvlog-transactions, type: CSVLog, logging: {transactionSampleRate: 0.1}}
  - {name: stderr-lock-waits, type: Stderr, logging: {statement: all, lockWaits: true}}
  - {name: jsonlog-analyze, type: JSONLog, logging: {autoExplain: {minDuration: 0, analyze: true, buffers: true, format: json}}}
  - {name: stdout-sampled, type: Stdout, logging: {minDurationSample: 0, statementSampleRate: 0.1}}
  workload: {builtin: TPCBLike, clients: [4], repeats: 1, duration: 2s, warmup: 0s}
`

// TestOtherSettingsCountedAtTheSource runs moreCountedSettings on PostgreSQL 15 and 18:
// every row's records are counted at the source and all of them delivered, and the lock
// waits row holds more records than its statements, the waits'.
func TestOtherSettingsCountedAtTheSource(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a PostgreSQL extension and starts PostgreSQL servers")
	}
	localpgtest.Run(t, func(t *testing.T, inst localpg.Installation) {
		benchmark, err := manifest.Decode([]byte(moreCountedSettings))
		if err != nil {
			t.Fatal(err)
		}
		spec := &benchmark.Spec
		outcome, err := Execute(context.Background(), spec, Options{
			Installation: inst, Seed: 1, CounterLibrary: localpgtest.CounterLibrary(t, inst),
		})
		if err != nil {
			t.Fatal(err)
		}
		rows := results.Aggregate(spec, outcome.Runs)
		for _, row := range rows {
			name, r := results.RowName(row), row.Records
			if len(results.Successful(row.Repeats)) != 1 {
				t.Errorf("%s failed: %+v", name, row.Repeats)
				continue
			}
			if r.ExpectedSource != v1alpha1.ExpectedCounted || r.Expected == 0 || r.Dropped == nil || *r.Dropped != 0 ||
				r.Delivered != r.Expected || r.AccountingError != "" {
				t.Errorf("%s: records %+v, want every record counted at the source delivered", name, r)
			}
			t.Logf("%s (%s): %d records counted at the source, %d delivered, after %d transactions", name,
				row.Logging, r.Expected, r.Delivered, row.Repeats[0].Transactions)
		}
		waits := findRow(t, rows, "stderr-lock-waits")
		if statements := 7 * waits.Repeats[0].Transactions; waits.Records.Expected <= statements {
			t.Errorf("stderr-lock-waits: %d records for %d statements: no lock wait logged, the case exercises nothing",
				waits.Records.Expected, statements)
		}
	})
}

// TestCounterFieldIgnoredLocally: spec.postgres.counter says how a cluster's servers get
// the counter; a local run loads its own and says it ignores the field.
func TestCounterFieldIgnoredLocally(t *testing.T) {
	spec := &v1alpha1.LoggingBenchmarkSpec{Postgres: v1alpha1.PostgresSpec{
		Counter: &v1alpha1.CounterSpec{Source: v1alpha1.CounterInOperandImage}}}
	if ignored := IgnoredFields(spec); !slices.Contains(ignored, "spec.postgres.counter") {
		t.Errorf("IgnoredFields = %q, want spec.postgres.counter among them", ignored)
	}
}
