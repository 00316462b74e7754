package report

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/golden"
	"github.com/logbench/logbench/internal/results"
)

// hostileError is a failure message with markup in it: the HTML must show it as text.
const hostileError = `pgbench: <script>alert("x")</script> & "quotes"`

// run names a repeat in the fixtures: destination, clients, repeat.
type run struct {
	destination     string
	clients, repeat int32
}

func repeat(tps float64, expected, delivered int64) v1alpha1.RepeatResult {
	dropped := expected - delivered
	r := v1alpha1.RepeatResult{
		TPS: tps, LatencyAvgMs: 1000 / tps, LatencyStdDevMs: 0.5, Transactions: int64(tps * 10), DrainSeconds: 0.2,
		Records: v1alpha1.Records{Expected: expected, Delivered: delivered, Dropped: &dropped},
	}
	if delivered > 0 {
		r.LogBytes = new(delivered * 150)
	}
	return r
}

func failedRepeat(msg string) v1alpha1.RepeatResult { return v1alpha1.RepeatResult{Error: msg} }

func estimated(r v1alpha1.RepeatResult) v1alpha1.RepeatResult {
	r.Records.Dropped, r.Records.ExpectedIsEstimate = nil, true
	return r
}

// benchmark builds a finished benchmark whose status comes from results.Aggregate, as
// the operator's and the local runner's do.
func benchmark(
	destinations []v1alpha1.Destination, baseline bool, clients []int32, runs map[run]v1alpha1.RepeatResult,
) *v1alpha1.LoggingBenchmark {
	started := metav1.NewTime(time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC))
	completed := metav1.NewTime(started.Add(17*time.Minute + 4*time.Second))
	minDuration := int32(-1)
	b := &v1alpha1.LoggingBenchmark{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "LoggingBenchmark"},
		ObjectMeta: metav1.ObjectMeta{Name: "sample", Namespace: "benchmarks"},
		Spec: v1alpha1.LoggingBenchmarkSpec{
			Destinations: destinations,
			Baseline:     v1alpha1.BaselineSpec{Enabled: baseline},
			Logging: v1alpha1.LoggingSpec{
				Statement: v1alpha1.StatementAll, MinDurationStatement: &minDuration, LinePrefix: "%m [%p] %a ",
			},
			Workload: v1alpha1.WorkloadSpec{
				Builtin: v1alpha1.WorkloadSelectOnly, QueryMode: v1alpha1.QueryPrepared, Scale: 10,
				Clients: clients, Duration: metav1.Duration{Duration: 30 * time.Second}, Repeats: 3,
				Aggregate: v1alpha1.AggregateMedian,
			},
		},
	}
	keyed := make(map[results.RunKey]v1alpha1.RepeatResult, len(runs))
	for r, result := range runs {
		keyed[results.RunKey{Destination: r.destination, Clients: r.clients, Repeat: r.repeat}] = result
	}
	rows := results.Aggregate(&b.Spec, keyed)
	b.Status = v1alpha1.LoggingBenchmarkStatus{
		Phase:     v1alpha1.PhaseSucceeded,
		StartTime: &started, CompletionTime: &completed,
		Progress: v1alpha1.Progress{RunsDone: int32(len(runs)), RunsTotal: b.Spec.RunsTotal()},
		Results:  rows,
		Summary:  results.Summarize(rows),
	}
	return b
}

var (
	csvlog  = v1alpha1.Destination{Name: "csvlog", Type: v1alpha1.DestinationCSVLog}
	stdout  = v1alpha1.Destination{Name: "stdout", Type: v1alpha1.DestinationStdout, Format: v1alpha1.FormatJSONLog}
	jsonlog = v1alpha1.Destination{Name: "jsonlog", Type: v1alpha1.DestinationJSONLog}
)

// fullBenchmark has every case the charts draw: repeats with spread, an overhead with
// its interval, drops with their reason, an estimate, an accounting error, a failed repeat and a row where every repeat
// failed.
func fullBenchmark() *v1alpha1.LoggingBenchmark {
	dropping := repeat(17100, 171002, 160000)
	dropping.Records.DropReason = "loki refused pushes of 11002 samples, retries included (rate_limited 11002)"
	overcount := repeat(15000, 150000, 150010)
	overcount.Records.Dropped, overcount.Records.AccountingError = nil, "delivered 150010 records but expected 150000"
	retried := repeat(62000, 620000, 620000)
	retried.FailedAttempts = []string{"connecting to the server: the primary restarted\nmore"}
	failedAfterRetries := failedRepeat(hostileError)
	failedAfterRetries.FailedAttempts = []string{"pgbench exited with code 2", "pgbench exited with code 2"}
	runs := map[run]v1alpha1.RepeatResult{
		{"baseline", 1, 1}:  repeat(27300, 0, 0),
		{"baseline", 1, 2}:  repeat(27100, 0, 0),
		{"baseline", 1, 3}:  repeat(26500, 0, 0),
		{"baseline", 4, 1}:  repeat(49200, 0, 0),
		{"baseline", 4, 2}:  repeat(48800, 0, 0),
		{"baseline", 4, 3}:  repeat(50100, 0, 0),
		{"baseline", 16, 1}: repeat(61000, 0, 0),
		{"csvlog", 1, 1}:    repeat(16100, 161002, 161002),
		{"csvlog", 1, 2}:    repeat(15900, 159002, 158990),
		{"csvlog", 1, 3}:    repeat(16000, 160002, 160002),
		{"csvlog", 4, 1}:    dropping,
		{"csvlog", 4, 2}:    failedAfterRetries,
		{"csvlog", 16, 1}:   repeat(18000, 180000, 180000),
		{"stdout", 1, 1}:    estimated(repeat(9100, 91000, 90000)),
		{"stdout", 1, 2}:    overcount,
		{"stdout", 4, 1}:    failedRepeat("cluster not ready"),
		{"stdout", 4, 2}:    failedRepeat("cluster not ready"),
		{"jsonlog", 1, 1}:   repeat(14000, 140002, 140002),
		{"jsonlog", 4, 1}:   repeat(26000, 0, 0),
		{"jsonlog", 16, 1}:  retried,
	}
	return benchmark([]v1alpha1.Destination{csvlog, stdout, jsonlog}, true, []int32{1, 4, 16}, runs)
}

// edgeCases are benchmarks the charts must draw without dividing by zero.
func edgeCases() map[string]*v1alpha1.LoggingBenchmark {
	return map[string]*v1alpha1.LoggingBenchmark{
		"full": fullBenchmark(),
		"no baseline": benchmark([]v1alpha1.Destination{csvlog, jsonlog}, false, []int32{1, 8}, map[run]v1alpha1.RepeatResult{
			{"csvlog", 1, 1}: repeat(100, 1000, 1000), {"jsonlog", 8, 1}: repeat(300, 3000, 2000),
		}),
		"single client count": benchmark([]v1alpha1.Destination{csvlog}, true, []int32{4}, map[run]v1alpha1.RepeatResult{
			{"baseline", 4, 1}: repeat(500, 0, 0),
			{"csvlog", 4, 1}:   repeat(400, 4000, 4000),
			{"csvlog", 4, 2}:   repeat(420, 4200, 4200),
		}),
		"zero values": benchmark([]v1alpha1.Destination{csvlog}, true, []int32{1}, map[run]v1alpha1.RepeatResult{
			{"baseline", 1, 1}: {}, {"csvlog", 1, 1}: {Records: v1alpha1.Records{Dropped: new(int64)}},
		}),
		"every run failed": benchmark([]v1alpha1.Destination{csvlog}, true, []int32{1, 2}, map[run]v1alpha1.RepeatResult{
			{"baseline", 1, 1}: failedRepeat("initdb failed"), {"csvlog", 2, 1}: failedRepeat(hostileError),
		}),
		"no results": benchmark([]v1alpha1.Destination{csvlog, stdout}, true, []int32{1}, nil),
	}
}

func TestRenderText(t *testing.T) {
	for _, f := range []Format{FormatTable, FormatMarkdown} {
		t.Run(string(f), func(t *testing.T) {
			var out bytes.Buffer
			if err := Render(&out, f, fullBenchmark()); err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, filepath.Join("testdata", "full."+string(f)+".golden"), out.Bytes())
		})
	}
}

func TestRenderEveryCase(t *testing.T) {
	for name, b := range edgeCases() {
		for _, f := range Formats {
			t.Run(name+"/"+string(f), func(t *testing.T) {
				var out bytes.Buffer
				if err := Render(&out, f, b); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(out.String(), "sample") && f != FormatTable {
					t.Errorf("the report does not name the benchmark:\n%s", out.String())
				}
				if len(b.Status.Results) == 0 && !strings.Contains(out.String(), noResults) {
					t.Errorf("a report without results does not say so:\n%s", out.String())
				}
			})
		}
	}
}

// TestParseFormat: the report and the result rows each take their own formats.
func TestParseFormat(t *testing.T) {
	const rowsFormats = ": use one of table, json, csv, markdown"
	tests := []struct {
		parse   func(string) (Format, error)
		in      string
		want    Format
		wantErr string
	}{
		{parse: ParseFormat, in: "table", want: FormatTable},
		{parse: ParseFormat, in: "Markdown", want: FormatMarkdown},
		{parse: ParseFormat, in: "HTML", want: FormatHTML},
		{parse: ParseFormat, in: "json", wantErr: `unknown report format "json": use one of table, markdown, html`},
		{parse: ParseRowsFormat, in: "table", want: FormatTable},
		{parse: ParseRowsFormat, in: "JSON", want: FormatJSON},
		{parse: ParseRowsFormat, in: "csv", want: FormatCSV},
		{parse: ParseRowsFormat, in: "Markdown", want: FormatMarkdown},
		{parse: ParseRowsFormat, in: "yaml", wantErr: `unknown output format "yaml"` + rowsFormats},
		{parse: ParseRowsFormat, in: "", wantErr: `unknown output format ""` + rowsFormats},
	}
	for _, tt := range tests {
		got, err := tt.parse(tt.in)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("parsing %q: error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("parsing %q = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	if err := Render(&bytes.Buffer{}, Format("pdf"), fullBenchmark()); err == nil {
		t.Error("Render accepted an unknown format")
	}
	if err := RenderRows(&bytes.Buffer{}, Format("yaml"), nil); err == nil {
		t.Error("RenderRows accepted an unknown format")
	}
}

func TestDecode(t *testing.T) {
	saved, err := yaml.Marshal(fullBenchmark())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		data    string
		wantErr string
	}{
		{name: "saved YAML", data: string(saved)},
		{name: "JSON", data: `{"apiVersion":"bench.logbench.io/v1alpha1","kind":"LoggingBenchmark",` +
			`"metadata":{"name":"x"},"status":{"phase":"Running"}}`},
		{name: "fields of a newer operator", data: "apiVersion: bench.logbench.io/v1alpha1\nkind: LoggingBenchmark\n" +
			"metadata: {name: x}\nstatus: {newField: 1}\n"},
		{name: "empty list", data: "apiVersion: v1\nkind: List\nitems: []\n", wantErr: "the list holds no LoggingBenchmark"},
		{
			name:    "other kind",
			data:    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
			wantErr: "expected apiVersion bench.logbench.io/v1alpha1 and kind LoggingBenchmark",
		},
		{
			name:    "no name",
			data:    "apiVersion: bench.logbench.io/v1alpha1\nkind: LoggingBenchmark\n",
			wantErr: "no metadata.name",
		},
		{name: "not YAML", data: "{[", wantErr: "not a LoggingBenchmark in YAML or JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode([]byte(tt.data), "")
			if tt.wantErr == "" && err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Decode error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

// FuzzDecode feeds foreign files to the decoder and whatever it accepts to every
// format: nothing may panic, and an HTML page, when rendered, has finite coordinates.
func FuzzDecode(f *testing.F) {
	for _, b := range edgeCases() {
		data, err := yaml.Marshal(b)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"apiVersion":"bench.logbench.io/v1alpha1","kind":"LoggingBenchmark","metadata":{"name":"x"},` +
		`"status":{"results":[{"destination":"a","clients":0,"tps":1e300,"tpsStdDev":1e300}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := Decode(data, "")
		if err != nil {
			return
		}
		for _, format := range Formats {
			var out bytes.Buffer
			if err := Render(&out, format, b); err != nil || format != FormatHTML {
				continue
			}
			checkCoordinates(t, parseHTML(t, out.Bytes()))
		}
	})
}

func TestLoggingSettingsNamePgaudit(t *testing.T) {
	logging := v1alpha1.LoggingSpec{Statement: v1alpha1.StatementNone, Pgaudit: &v1alpha1.PgauditSpec{
		Log: []v1alpha1.PgauditClass{v1alpha1.PgauditRead, v1alpha1.PgauditWrite}, LogRelation: true}}
	want := `pgaudit.log="read, write", pgaudit.log_parameter=off, pgaudit.log_relation=on (not on the baseline)`
	if got := loggingSettings(logging); !strings.HasSuffix(got, want) {
		t.Errorf("logging settings %q, want them to end with %q", got, want)
	}
	if got := loggingSettings(v1alpha1.LoggingSpec{Statement: v1alpha1.StatementAll}); strings.Contains(got, "pgaudit") {
		t.Errorf("logging settings %q name pgaudit, which is off", got)
	}
}

// TestDecodeList: a benchmark saved from a cluster with its runs' records (kubectl get
// lbench,lbrun -o yaml), whose status holds no repeats, reports as the same benchmark
// with its repeats inline does; records of another benchmark are left out.
func TestDecodeList(t *testing.T) {
	inline := fullBenchmark()
	inline.Namespace = "team"
	var want bytes.Buffer
	if err := Render(&want, FormatMarkdown, inline); err != nil {
		t.Fatal(err)
	}
	saved := inline.DeepCopy()
	saved.APIVersion, saved.Kind = v1alpha1.GroupVersion.String(), "LoggingBenchmark"
	items := []any{saved}
	record := func(benchmark, destination string, clients int32, result v1alpha1.RepeatResult) any {
		return &v1alpha1.LoggingBenchmarkRun{
			TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "LoggingBenchmarkRun"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "team",
				Name: fmt.Sprintf("%s-%s-c%d-r%d", benchmark, destination, clients, result.Repeat)},
			Spec: v1alpha1.LoggingBenchmarkRunSpec{Benchmark: benchmark, Destination: destination, Clients: clients,
				Repeat: result.Repeat},
			Status: result,
		}
	}
	for i := range saved.Status.Results {
		row := &saved.Status.Results[i]
		// In the reverse order of their repeats, as a list need not hold them in order.
		for _, result := range slices.Backward(row.Repeats) {
			items = append(items, record(saved.Name, row.Destination, row.Clients, result))
			items = append(items, record("other", row.Destination, row.Clients, v1alpha1.RepeatResult{Repeat: result.Repeat,
				TPS: 1}))
		}
		row.Repeats = nil
	}
	list, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"", saved.Name} {
		decoded, err := Decode(list, name)
		if err != nil {
			t.Fatalf("Decode(%q): %v", name, err)
		}
		var got bytes.Buffer
		if err := Render(&got, FormatMarkdown, decoded); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() {
			t.Errorf("the report of the list differs from that of the status with its repeats:\n%s\nwant:\n%s", &got, &want)
		}
	}
	if _, err := Decode(list, "missing"); err == nil || !strings.Contains(err.Error(), "no LoggingBenchmark missing") {
		t.Errorf("Decode of a name the list does not hold: %v", err)
	}
	other := saved.DeepCopy()
	other.Name = "other"
	twice, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": []any{saved, other}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(twice, ""); err == nil || !strings.Contains(err.Error(), "give the NAME of one") {
		t.Errorf("Decode of a list of two benchmarks without a name: %v", err)
	}

	// kubectl get -A saves benchmarks of one name from several namespaces.
	elsewhere := saved.DeepCopy()
	elsewhere.Namespace = "staging"
	elsewhere.Status.Results[0].Repeats = []v1alpha1.RepeatResult{{Repeat: 1, TPS: 1}}
	namespaces, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "List",
		"items": []any{saved, elsewhere}})
	if err != nil {
		t.Fatal(err)
	}
	for reference, namespace := range map[string]string{"team/" + saved.Name: "team", "staging/" + saved.Name: "staging"} {
		decoded, err := Decode(namespaces, reference)
		if err != nil || decoded.Namespace != namespace {
			t.Errorf("Decode(%q) = %v, %v; want the benchmark of namespace %s", reference, decoded, err, namespace)
		}
	}
	for reference, message := range map[string]string{
		saved.Name:            "(team/" + saved.Name + ", staging/" + saved.Name + "): give the NAME of one, or NAMESPACE/NAME",
		"other/" + saved.Name: "no LoggingBenchmark other/" + saved.Name,
		"a/b/c":               `"a/b/c" names no LoggingBenchmark: give NAME or NAMESPACE/NAME`,
		"/" + saved.Name:      "give NAME or NAMESPACE/NAME",
	} {
		if _, err := Decode(namespaces, reference); err == nil || !strings.Contains(err.Error(), message) {
			t.Errorf("Decode(%q) error = %v, want it to contain %q", reference, err, message)
		}
	}
	one, err := yaml.Marshal(elsewhere)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(one, "team/"+saved.Name); err == nil ||
		!strings.Contains(err.Error(), "holds LoggingBenchmark staging/"+saved.Name+", not team/"+saved.Name) {
		t.Errorf("Decode of one benchmark of another namespace: %v", err)
	}
}
