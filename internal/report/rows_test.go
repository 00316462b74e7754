package report

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/logbench/logbench/api/v1alpha1"
	"github.com/logbench/logbench/internal/golden"
	"github.com/logbench/logbench/internal/schedule"
)

// goldenRows cover every marker of the tables; they are the rows results.Aggregate
// makes of the runs of its golden test (internal/results/testdata/aggregate.json.golden),
// kept here as rendering's input.
func goldenRows(t *testing.T) []v1alpha1.Result {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "rows.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []v1alpha1.Result
	if err := json.Unmarshal(data, &rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestRenderRows(t *testing.T) {
	for _, f := range RowsFormats {
		t.Run(string(f), func(t *testing.T) {
			var out bytes.Buffer
			if err := RenderRows(&out, f, goldenRows(t)); err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, filepath.Join("testdata", "rows."+string(f)+".golden"), out.Bytes())
		})
	}
}

func TestRenderRowsEmpty(t *testing.T) {
	tests := []struct {
		format Format
		want   string
	}{
		{FormatJSON, "[]\n"},
		{FormatCSV, strings.Join(csvHeader, ",") + "\n"},
	}
	for _, tt := range tests {
		t.Run(string(tt.format), func(t *testing.T) {
			var out bytes.Buffer
			if err := RenderRows(&out, tt.format, nil); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Errorf("RenderRows(nil) = %q, want %q", out.String(), tt.want)
			}
		})
	}
}

// TestRenderRefusesNamesItDoesNotKnow: only ParseRowsFormat's results are formats, so a name
// in another case is refused rather than rendered as nothing.
func TestRenderRefusesNamesItDoesNotKnow(t *testing.T) {
	for _, name := range []Format{"TABLE", "yaml"} {
		if err := RenderRows(io.Discard, name, nil); err == nil || !strings.Contains(err.Error(), "use one of") {
			t.Errorf("RenderRows(%q) error = %v, want the formats it knows", name, err)
		}
	}
}

// TestStagesNoteListsTheCountedStages: a stage that was not counted is left out, not
// shown as zero records.
func TestStagesNoteListsTheCountedStages(t *testing.T) {
	for name, tc := range map[string]struct {
		stages v1alpha1.RecordStages
		want   string
	}{
		"a shipping pipeline": {
			v1alpha1.RecordStages{Written: new(int64(10)), Read: new(int64(10)), Sent: new(int64(8)), LostAt: "sent"},
			"fluent/2 records by stage: written 10, read 10, sent 8; lost at sent",
		},
		"a node agent's pipeline": {
			v1alpha1.RecordStages{ContainerLog: new(int64(10)), Stored: new(int64(10))},
			"fluent/2 records by stage: container log 10, stored 10; no stage lost records",
		},
	} {
		t.Run(name, func(t *testing.T) {
			row := v1alpha1.Result{Destination: "fluent", Clients: 2, Records: v1alpha1.Records{Stages: &tc.stages}}
			if got := StagesNote(row); got != tc.want {
				t.Errorf("note %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDuplicatesAreALowerBoundUnlessCountedByIdentity(t *testing.T) {
	for _, tc := range []struct {
		stages *v1alpha1.RecordStages
		want   string
	}{
		{nil, "at least 10"},
		{&v1alpha1.RecordStages{Duplicates: 10}, "at least 10"},
		{&v1alpha1.RecordStages{Duplicates: 10, DuplicatesExact: true}, "10 (counted by identity)"},
	} {
		if got := duplicateCount(10, tc.stages); got != tc.want {
			t.Errorf("duplicates of stages %+v: %q, want %q", tc.stages, got, tc.want)
		}
	}
	// The tables' cell says the same: marked ≥ unless counted by identity.
	format := func(n int64) string { return strconv.FormatInt(n, 10) }
	for _, tc := range []struct {
		records v1alpha1.Records
		want    string
	}{
		{v1alpha1.Records{}, "0"},
		{v1alpha1.Records{Duplicates: 10}, "≥10"},
		{v1alpha1.Records{Duplicates: 10, Stages: &v1alpha1.RecordStages{Duplicates: 10}}, "≥10"},
		{v1alpha1.Records{Duplicates: 10, Stages: &v1alpha1.RecordStages{Duplicates: 10, DuplicatesExact: true}}, "10"},
	} {
		if got := DuplicatesCell(tc.records, format); got != tc.want {
			t.Errorf("duplicates cell of %+v: %q, want %q", tc.records, got, tc.want)
		}
	}
}

func TestOverheadCell(t *testing.T) {
	overhead := 1.25
	withinNoise := v1alpha1.Result{OverheadPercent: &overhead, OverheadVerdict: v1alpha1.OverheadWithinNoise,
		OverheadInterval: &v1alpha1.OverheadInterval{LowPercent: -3, HighPercent: 4.5}}
	if got, want := OverheadCell(withinNoise), "~ 1.2% [-3.0, 4.5]"; got != want {
		t.Errorf("OverheadCell = %q, want %q", got, want)
	}
	if got := OverheadCell(v1alpha1.Result{}); got != missing {
		t.Errorf("OverheadCell without overhead = %q", got)
	}
}

func TestExpectedSourceNote(t *testing.T) {
	row := func(destination string, source v1alpha1.ExpectedSource, ok bool) v1alpha1.Result {
		repeat := v1alpha1.RepeatResult{Repeat: 1}
		if !ok {
			repeat.Error = "failed"
		}
		return v1alpha1.Result{Destination: destination, Clients: 2, Repeats: []v1alpha1.RepeatResult{repeat},
			Records: v1alpha1.Records{ExpectedSource: source}}
	}
	tests := []struct {
		name string
		rows []v1alpha1.Result
		want string
	}{
		{"no measurement", []v1alpha1.Result{row("a", v1alpha1.ExpectedCounted, false)}, ""},
		{"every row counted", []v1alpha1.Result{row("a", v1alpha1.ExpectedCounted, true), row("b", v1alpha1.ExpectedPredicted, false)},
			"expected: " + countedAtTheSource + " in every row"},
		{"every row predicted, one written before the source was recorded",
			[]v1alpha1.Result{row("a", v1alpha1.ExpectedPredicted, true), row("b", "", true)},
			"expected: " + predictedFromTheRuns + " in every row"},
		{"both", []v1alpha1.Result{row("a", v1alpha1.ExpectedCounted, true), row("b", v1alpha1.ExpectedPredicted, true)},
			"expected: " + countedAtTheSource + " in a/2; " + predictedFromTheRuns + " in b/2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExpectedSourceNote(tt.rows); got != tt.want {
				t.Errorf("ExpectedSourceNote = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestKneeNotes: a ramp that reached its maximum and one a stop condition ended, from
// the rows schedule.MarkKnees marked.
func TestKneeNotes(t *testing.T) {
	stop := "overhead 60.0% above 50% at 4 clients"
	rows := []v1alpha1.Result{
		{Destination: "csv", Clients: 4},
		{Destination: "csv", Clients: 8, Knee: true},
		{Destination: "stdout", Clients: 2, Knee: true},
		{Destination: "stdout", Clients: 4, RampStop: stop},
		{Destination: "first", Clients: 1, RampStop: stop},
	}
	want := []string{
		"^ csv: knee at 8 clients; the ramp " + schedule.ReachedMax,
		"^ stdout: knee at 2 clients; the ramp stopped at 4: " + stop,
		"^ first: no knee, its first client count stopped the ramp: " + stop,
	}
	if notes := KneeNotes(rows); !slices.Equal(notes, want) {
		t.Errorf("notes\n%s\nwant\n%s", strings.Join(notes, "\n"), strings.Join(want, "\n"))
	}
}

// TestPlacementNote: the note says whether the clients ran on their servers' nodes, from
// the successful repeats that recorded both nodes, and names the rows where some did.
func TestPlacementNote(t *testing.T) {
	repeat := func(client, server string) v1alpha1.RepeatResult {
		return v1alpha1.RepeatResult{ClientNode: client, ServerNode: server}
	}
	failed := v1alpha1.RepeatResult{ClientNode: "a", ServerNode: "a", Error: "pgbench exited with code 1"}
	row := func(destination string, repeats ...v1alpha1.RepeatResult) v1alpha1.Result {
		return v1alpha1.Result{Destination: destination, Clients: 2, Repeats: repeats}
	}
	tests := []struct {
		name string
		rows []v1alpha1.Result
		want string
	}{
		{"local runs record no node", []v1alpha1.Result{row("csv", repeat("", ""))}, ""},
		{"apart", []v1alpha1.Result{row("csv", repeat("a", "b"), failed), row("stdout", repeat("b", "a"))},
			"placement: the client ran on another node than the server in every run (2)"},
		{"same node", []v1alpha1.Result{row("csv", repeat("a", "a"))},
			"placement: the client ran on the server's node, competing for its cores, in every run (1)"},
		{"some on the same node", []v1alpha1.Result{row("csv", repeat("a", "b")), row("stdout", repeat("a", "b"), repeat("b", "b"))},
			"placement: the client ran on the server's node, competing for its cores, in 1 of 3 runs (stdout/2)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PlacementNote(tt.rows); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestOverheadAgainstText: one reference is named alone; references of their own
// placement each name the destinations measured against them.
func TestOverheadAgainstText(t *testing.T) {
	row := func(destination, against string) v1alpha1.Result {
		return v1alpha1.Result{Destination: destination, OverheadAgainst: against}
	}
	tests := []struct {
		name string
		rows []v1alpha1.Result
		want string
	}{
		{"no overhead", []v1alpha1.Result{row("baseline", ""), row("csv", "")}, ""},
		{"one reference", []v1alpha1.Result{row("baseline", ""), row("csv", "baseline"), row("csv", "baseline"),
			row("stdout", "baseline")}, "baseline"},
		{"a reference per placement", []v1alpha1.Result{row("baseline", ""), row("csv", "baseline"),
			row("none-same", ""), row("csv-same", "none-same"), row("csv", "baseline"), row("stdout", "baseline")},
			"baseline for csv, stdout; none-same for csv-same"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := OverheadAgainstText(tt.rows); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestReceiverNote: a forwarding Syslog destination's row says what its receiver spent
// under the table, which the shipper's columns leave out; other rows say nothing.
func TestReceiverNote(t *testing.T) {
	row := v1alpha1.Result{Destination: "udp", Type: v1alpha1.DestinationSyslog, Clients: 2,
		Repeats:          []v1alpha1.RepeatResult{{Repeat: 1, TPS: 100}},
		ReceiverCPUCores: new(0.125), ReceiverCPUMsPer1kRecords: new(3.25), ReceiverPeakMemoryBytes: new(int64(18 << 20))}
	want := "udp/2: the syslog receiver's pod spent 0.12 cores (3.2 ms per 1,000 records the server " +
		"wrote), 18 MiB at most"
	if got := ReceiverNote(row); got != want {
		t.Errorf("note %q, want %q", got, want)
	}
	if notes := footnotes([]v1alpha1.Result{row}); !slices.Contains(notes, want) {
		t.Errorf("footnotes %q lack the receiver's", notes)
	}
	row.ReceiverCPUCores, row.ReceiverCPUMsPer1kRecords, row.ReceiverPeakMemoryBytes = nil, nil, nil
	if got := ReceiverNote(row); got != "" {
		t.Errorf("a row without a receiver has the note %q", got)
	}
}

// TestScriptsNote: a row of runs of several scripts gives each script's figures under the
// table, and says when pgbench's figures of the scripts miss some of the runs'.
func TestScriptsNote(t *testing.T) {
	row := v1alpha1.Result{Destination: "csv", Type: v1alpha1.DestinationCSVLog, Clients: 2,
		Repeats: []v1alpha1.RepeatResult{{Repeat: 1, TPS: 100, Transactions: 1000, Scripts: []v1alpha1.ScriptResult{
			{Key: "read.sql", Transactions: 800, TPS: 80, LatencyAvgMs: 0.0412},
			{Key: "report.sql", Transactions: 197, TPS: 19.7, LatencyAvgMs: 12.5},
		}}}}
	want := "csv/2 scripts: read.sql 80.0 TPS, 0.041 ms; report.sql 19.7 TPS, 12.500 ms (their transactions are " +
		"997 of the runs' 1000: with several threads pgbench adds them up without a lock)"
	if got := ScriptsNote(row); got != want {
		t.Errorf("note %q, want %q", got, want)
	}
	if notes := footnotes([]v1alpha1.Result{row}); !slices.Contains(notes, want) {
		t.Errorf("footnotes %q lack the scripts'", notes)
	}
	row.Repeats[0].Transactions = 997
	if got := ScriptsNote(row); strings.Contains(got, "without a lock") {
		t.Errorf("scripts that hold every transaction: %q", got)
	}
	row.Repeats[0].Scripts = nil
	if got := ScriptsNote(row); got != "" {
		t.Errorf("a row of one script has the note %q", got)
	}
}
